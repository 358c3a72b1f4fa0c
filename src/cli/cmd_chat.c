/* egang chat: a conversation with a model in the terminal. */
#include "cli/cli.h"

int cmd_chat(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	log_error("chat: not yet");
	return EXIT_FAIL;
}
