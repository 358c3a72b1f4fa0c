/* json_schema: JSON schema to GBNF (json_schema.h has the contract). */
#include "model/json_schema.h"

#include "base/base.h"

char *json_schema_to_gbnf(const json_t *schema)
{
	(void)schema;
	err_set("json_schema: at #: not implemented yet");
	return NULL;
}

char *json_schema_any_object_gbnf(void)
{
	err_set("json_schema: not implemented yet");
	return NULL;
}
