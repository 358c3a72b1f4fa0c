/* egang convert: a llama2.c checkpoint and its tokenizer into one GGUF
 * (model.h: model_convert_llama2c). */
#include "cli/cli.h"
#include "model/model.h"

static const char convert_help[] =
	"usage: egang convert CHECKPOINT.bin -z TOKENIZER.bin -o OUT.gguf\n"
	"\n"
	"Converts a llama2.c checkpoint and its tokenizer into one F32 GGUF with\n"
	"the tokenizer inside (tied classifier kept tied).\n"
	"\n"
	"  -z, --tokenizer FILE   llama2.c tokenizer.bin (required)\n"
	"  -o, --output FILE      the GGUF to write (required)\n"
	"  -h, --help             this text\n";

int cmd_convert(int argc, char **argv)
{
	const char *tok = NULL, *out = NULL, *in = NULL;
	const cli_opt_t opts[] = {
		OPT_STR("tokenizer", 'z', &tok, .required = true),
		OPT_STR("output", 'o', &out, .required = true),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "convert", .help = convert_help,
			       .opts = opts, .operands = &in, .min_operands = 1,
			       .max_operands = 1, .operands_name = "CHECKPOINT"};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	if (model_convert_llama2c(in, tok, out) < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	log_info("wrote %s", out);
	return EXIT_OK;
}
