/* The `egang bench WHAT` subcommands, each `int cmd_bench_X(int argc, char
 * **argv)` with argv[0] = WHAT (cli.h's convention); cmd_bench dispatches. */
#ifndef EGANG_CLI_CMD_BENCH_H
#define EGANG_CLI_CMD_BENCH_H

int cmd_bench_protocol(int argc, char **argv);   /* cmd_bench.c */
int cmd_bench_decode(int argc, char **argv);     /* cmd_bench_decode.c */
int cmd_bench_prefill(int argc, char **argv);
int cmd_bench_width(int argc, char **argv);
int cmd_bench_overhead(int argc, char **argv);
int cmd_bench_coschedule(int argc, char **argv); /* cmd_bench_coschedule.c */
int cmd_bench_serve(int argc, char **argv);      /* cmd_bench_serve.c */
int cmd_bench_switch_cost(int argc, char **argv); /* cmd_bench_switch_cost.c */
int cmd_bench_switching(int argc, char **argv);  /* cmd_bench_switching.c */
int cmd_bench_membw(int argc, char **argv);      /* cmd_bench_membw.c */
int cmd_bench_matvec(int argc, char **argv);
int cmd_bench_knobs(int argc, char **argv);      /* cmd_bench_knobs.c */
int cmd_bench_agent(int argc, char **argv);      /* cmd_bench_agent.c */
int cmd_bench_grammar(int argc, char **argv);    /* cmd_bench_grammar.c */

#endif
