/* egang quantize: a GGUF's weight matrices requantized as one type or one
 * of llama-quantize's preset mixes (model/quant.c does the work). */
#include <stdio.h>
#include <unistd.h>

#include "cli/cli.h"
#include "model/model.h"

static const char quantize_help[] =
	"usage: egang quantize IN.gguf OUT.gguf TYPE [--allow-requantize] [--threads N] [-q]\n"
	"\n"
	"Rewrites a GGUF with its weight matrices quantized (llama-quantize's\n"
	"argument order). TYPE is one type for every matrix (q8_0, q4_0, q4_1,\n"
	"q5_0, q5_1, q3_k, q4_k, q5_k, f16, bf16, f32) or a llama-quantize preset\n"
	"(q2_k, q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k,\n"
	"iq4_nl, iq4_xs), which raises output, attn_v, attn_output and ffn_down\n"
	"in some layers as llama-quantize does. Rows that are not whole blocks of\n"
	"a type fall back (q4_k -> q5_0, q6_k -> q8_0, iq4_xs -> iq4_nl, ...;\n"
	"then f16). Norms and other vectors are\n"
	"copied, and so is every key-value.\n"
	"\n"
	"      --allow-requantize  quantize matrices that are already quantized\n"
	"      --threads N         threads (default: the online CPUs)\n"
	"  -q, --quiet             no progress\n"
	"  -h, --help              this text\n";

int cmd_quantize(int argc, char **argv)
{
	bool requant = false;
	int64_t threads = sysconf(_SC_NPROCESSORS_ONLN);
	const char *ops[3];
	const cli_opt_t opts[] = {
		OPT_FLAG("allow-requantize", 0, &requant),
		OPT_INT("threads", 0, &threads, 1, 64),
		CLI_END,
	};
	const cli_cmd_t cmd = {.name = "quantize", .help = quantize_help,
			       .opts = opts, .operands = ops, .min_operands = 3,
			       .max_operands = 3, .operands_name = "IN.gguf OUT.gguf TYPE"};
	int status;
	if (!cli_parse(&cmd, argc, argv, &status))
		return status;
	quant_mix_t mix;
	if (quant_mix_from_name(ops[2], &mix) < 0) {
		log_error("quantize: TYPE '%s' is not one of %s", ops[2],
			  quant_mix_names());
		return EXIT_INPUT;
	}
	if (model_quantize_file(ops[0], ops[1], &mix, requant, (int)threads,
				cli_progress, NULL) < 0) {
		log_error("%s", err_get());
		return EXIT_INPUT;
	}
	log_info("wrote %s: %s", ops[1], mix.name);
	return EXIT_OK;
}
