/* engine_open: the one way a command opens what it needs to generate, and
 * runs a generation on it.
 *
 * engine_open, in order: the policy library (built-ins for the gang's
 * slots, then a user file) and the control word when one is named, the
 * model, its forward pass with a KV cache of ctx positions, and the gang
 * over the chosen CPUs (its leader is the calling thread), bound to the
 * policy runtime. engine_close undoes it in reverse. Checks that need no
 * memory (the library, the control word, the context) come before the
 * model is read.
 *
 * Around it: engine_cpus_parse turns --cores into the gang's CPUs,
 * engine_run runs one generation on what engine_open opened (the policy
 * runtime choosing the membership), and engine_policies loads the
 * library alone (for commands that open no model). */
#ifndef EGANG_ENGINE_OPEN_H
#define EGANG_ENGINE_OPEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"
#include "gang/gang.h"
#include "model/forward.h"
#include "model/model.h"
#include "policy/control.h"
#include "policy/policy.h"

typedef struct engine_config {
	const char *model_path; /* GGUF or llama2.c checkpoint */
	const char *tok_path;   /* llama2.c tokenizer.bin, or NULL */
	const int *cpus;        /* gang slots in order; slot 0 = this thread */
	int n_cpus;             /* >= 1 */
	int32_t ctx;            /* KV positions; 0: the model's, at most 4096;
				   over the model's context: bad input */
	kv_type_t kv_type;      /* the KV cache's elements (0: KV_F16); one
				   the model cannot use (forward_kv_unfit):
				   bad input, even with no_forward */
	bool gang;              /* a gang even on one CPU (membership, traces);
				   more than one CPU always gets one */
	bool no_gang;           /* never a gang (the caller makes its own) */
	bool no_forward;        /* the model only (the caller sizes its own) */
	const char *control;    /* control word path (created 0600 if absent);
				   NULL: no policy runtime */
	const char *policies;   /* INI library after the built-ins, or NULL */
} engine_config_t;

typedef struct engine {
	model_t *m;
	forward_t *f;      /* NULL with no_forward */
	gang_t *g;         /* NULL: serial on the calling thread */
	int32_t ctx;       /* the KV positions allocated */
	kv_type_t kv_type; /* of f's caches, and of those its users make */
	policy_lib_t lib;  /* built-ins (+ user file): frozen once open */
	control_t *cw;     /* NULL without a control word */
	policy_rt_t rt;    /* bound to cw, lib and g when cw is set */
	int cpus[GANG_MAX_SLOTS];
	int n_cpus;
} engine_t;

/* Opens everything engine_config asks for. NULL + err_get() on failure,
 * with *exit_code EXIT_INPUT (a bad file, library, control word or context)
 * or EXIT_FAIL (memory, threads). The gang, if any, starts with every slot
 * requested unless a control word names the policy. */
engine_t *engine_open(const engine_config_t *c, int *exit_code);
/* Frees what engine_open made; NULL is fine. */
void engine_close(engine_t *e);

/* The gang's CPUs for a --cores list, in slot order (the list's CPUs,
 * lowest first), every one inside this process's affinity mask; NULL
 * list: the first max allowed CPUs, physical cores first (topo_load).
 * With notice (a command that runs work on them), a line on stderr says
 * when that leaves allowed CPUs out, or when the CPUs span NUMA nodes. The
 * count, or -1 + err_get() naming --cores and the limit (max,
 * GANG_MAX_SLOTS). */
int engine_cpus_parse(const char *list, int *cpus, int max, bool notice);
/* e's CPUs as a mask (for messages: cpumask_format). */
cpumask_t engine_cpumask(const engine_t *e);

/* One generation on e's model, forward pass and gang (engine_generate).
 * With a control word open, e's policy runtime chooses the membership
 * before every token (after p's own before_token) and is told the
 * generation's time to first token and decode speed after it. Returns as
 * engine_generate. */
int engine_run(engine_t *e, const engine_params_t *p, engine_result_t *r);

/* The speed line of a generation on e ("prompt: N tokens, R tok/s;
 * decode: ...; stop: REASON") and, on a gang, its membership counters,
 * to f. */
void engine_print_result(const engine_t *e, const engine_result_t *r,
			 FILE *f);

/* Loads the built-in library for n_slots and then the user file (NULL: none);
 * -1 + err_get() naming the file, line and field. */
int engine_policies(policy_lib_t *lib, int n_slots, const char *policies);

#endif
