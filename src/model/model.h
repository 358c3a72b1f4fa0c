/* model: configuration and weights of a Llama-family decoder, loaded from a
 * GGUF file (architectures llama, qwen2, qwen3, gemma3, phi3: arch_info) or
 * a llama2.c checkpoint, and the synthetic models of named real shapes.
 *
 * llama2.c checkpoint layout (little endian):
 *  1. 7 x int32: dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size
 *     (negative: a separate classifier follows), seq_len
 *  2. float32 weights in this order: token_embedding (vocab, dim),
 *     rms_att (L, dim), wq (L, dim, dim), wk (L, kv_dim, dim),
 *     wv (L, kv_dim, dim), wo (L, dim, dim), rms_ffn (L, dim),
 *     w1 (L, hidden, dim), w2 (L, dim, hidden), w3 (L, hidden, dim),
 *     rms_final (dim), legacy RoPE tables (seq_len, head_dim) (skipped),
 *     then wcls (vocab, dim) when vocab_size was negative. */
#ifndef EGANG_MODEL_H
#define EGANG_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels/kernels.h"
#include "model/gguf.h"
#include "model/tokenizer.h"

typedef enum model_arch {
	ARCH_LLAMA,  /* Llama 2 / 3.x, Mistral, SmolLM, TinyLlama */
	ARCH_QWEN2,
	ARCH_QWEN3,
	ARCH_GEMMA3,
	ARCH_PHI3,
	ARCH_COUNT
} model_arch_t;

/* What an architecture is, as facts (doc/ARCHITECTURE.md "Models"): the
 * forward pass is one, and reads these through model_config_t and layer_t. They are the
 * published models' and llama.cpp's GGUF conventions (general.architecture
 * and the tensor names). */
typedef struct arch_info {
	const char *name;   /* general.architecture */
	int rope_neox;      /* 1: rotate split halves, 0: adjacent pairs */
	bool qkv_bias;      /* attn_{q,k,v}.bias required (qwen2) */
	bool qk_norm;       /* attn_{q,k}_norm: per-head RMSNorm before RoPE */
	bool post_norms;    /* post_attention_norm and post_ffw_norm (gemma3) */
	bool gelu;          /* GELU(tanh)-gated FFN, else SiLU-gated */
	bool embed_scale;   /* embeddings times sqrt(dim) (gemma3) */
	bool fused;         /* attn_qkv (or q, k, v) and ffn_up of gate|up (phi3) */
	bool swa;           /* reads attention.sliding_window (gemma3) */
	double theta;       /* rope.freq_base when the key is absent */
} arch_info_t;
extern const arch_info_t arch_info[ARCH_COUNT];

typedef struct model_config {
	model_arch_t arch;
	int32_t dim;        /* embedding width */
	int32_t hidden_dim; /* FFN width */
	int32_t n_layers;
	int32_t n_heads;
	int32_t n_kv_heads;
	int32_t head_dim;   /* attention.key_length, or dim / n_heads */
	int32_t vocab_size;
	int32_t ctx;        /* context length the model was trained for */
	int32_t rope_dim;   /* dimensions rotated per head */
	int32_t rope_neox;  /* 0: adjacent pairs (llama), 1: split halves */
	float rope_theta;
	float rms_eps;
	/* the architecture's facts (arch_info) and its optional keys */
	bool qk_norm, post_norms, gelu;
	float embed_scale;   /* 0: none, else sqrtf(dim) (gemma3) */
	float q_scale;       /* q times this after RoPE; 1: none (gemma3 27B) */
	float logit_softcap; /* final_logit_softcapping; 0: none */
	/* RoPE of the global layers: angle = pos * theta^(-2i/rope_dim) /
	 * factor_i * rope_scale, cos and sin times rope_mscale; factor_i from
	 * the model's rope_freqs (llama3) or rope_factors_short/long (phi3,
	 * long when the run's context exceeds rope_orig_ctx), else 1 */
	float rope_scale;    /* 1 / rope.scaling.factor (linear), or 1 */
	float rope_mscale;   /* rope.scaling.attn_factor, or 1 */
	int32_t rope_orig_ctx; /* rope.scaling.original_context_length */
	/* sliding-window layers (layer_t.swa): attend to the last swa_window
	 * positions, RoPE base rope_theta_swa, no scaling or factors */
	int32_t swa_window;  /* 0: none */
	float rope_theta_swa;
	/* attention.sliding_window_pattern (llama.cpp's set_swa_pattern): layer
	 * l slides unless (l + 1) % swa_pattern == 0; 0: every layer slides;
	 * gemma3's default 6 when the key is absent */
	int32_t swa_pattern;
} model_config_t;

/* A 2-D weight: rows of `cols` elements of `type`, row-major. */
typedef struct tensor {
	dtype_t type;
	int64_t rows, cols;
	const void *data; /* (rows, cols) */
	/* its whole groups of 16 rows packed for the decode matvec (pack16
	 * in kernels.h; model_load), or NULL; data stays valid and is what
	 * everything else reads */
	const void *packed;
} tensor_t;

typedef struct layer {
	const float *attn_norm; /* (dim,) */
	tensor_t wq;            /* (n_heads * head_dim, dim) */
	tensor_t wk;            /* (n_kv_heads * head_dim, dim) */
	tensor_t wv;            /* (n_kv_heads * head_dim, dim) */
	const float *bq, *bk, *bv; /* qwen2 biases, NULL for llama */
	const float *q_norm, *k_norm; /* (head_dim,) per-head RMSNorm, or NULL */
	tensor_t wo;            /* (dim, n_heads * head_dim) */
	const float *post_attn_norm; /* (dim,) on wo's output (gemma3), or NULL */
	const float *ffn_norm;  /* (dim,) */
	const float *post_ffn_norm;  /* (dim,) on down's output, or NULL */
	bool swa;               /* a sliding-window layer */
	tensor_t w_gate;        /* (hidden, dim)  llama2.c w1 */
	tensor_t w_down;        /* (dim, hidden)  llama2.c w2 */
	tensor_t w_up;          /* (hidden, dim)  llama2.c w3 */
} layer_t;

typedef struct model {
	model_config_t cfg;
	tensor_t tok_embd;         /* (vocab, dim) */
	const float *output_norm;  /* (dim,) */
	tensor_t output;           /* (vocab, dim); may share tok_embd's data */
	layer_t *layers;           /* (n_layers) */
	/* RoPE frequency factors (rope_dim / 2), or NULL: llama3's rope_freqs,
	 * phi3's rope_factors_short and _long (model_config_t) */
	const float *rope_freqs, *rope_short, *rope_long;
	tokenizer_t *tok;
	const char *name;          /* general.name or the file's base name */
	const char *format;        /* "gguf" or "llama2c" */
	size_t file_size;
	/* Where the weight matrices live (model_load's weights mode):
	 * true when they were copied into anonymous memory advised for
	 * transparent huge pages, false when they are read through the file
	 * mapping (4 KiB pages). */
	bool weights_copied;
	size_t weights_bytes;     /* the span copied (0 when mapped) */
	double weights_load_s;    /* seconds the copy took */
	/* The packed copies of the quantized matrices for the decode matvec
	 * (model_load; EGANG_PACK=0 turns them off): bytes and seconds. */
	size_t packed_bytes;
	double pack_s;
	/* private: the mapping and owned float copies */
	gguf_t *gguf;
	void *map;
	size_t map_len;
	void *wmem;       /* the anonymous weight copy, or NULL */
	size_t wmem_len;
	void *pmem;       /* the packed copies (tensor_t.packed), or NULL */
	size_t pmem_len;
	float *owned; /* norms and biases converted to f32 */
	char *name_owned;
	/* The tokenizer's bytes as a grammar trie (model/grammar.h), built
	 * by model_grammar_vocab on first use, freed by model_free. */
	struct grammar_vocab *_Atomic grammar_vocab;
} model_t;

/* Where model_load puts the weight matrices.
 *  MODEL_WEIGHTS_MAP:  read them through the file's mapping (4 KiB pages,
 *                      shared with the page cache, no copy).
 *  MODEL_WEIGHTS_HUGE: copy them into anonymous memory with MADV_HUGEPAGE
 *                      (2 MiB transparent huge pages): decode streams every
 *                      weight once per token, and with 4 KiB pages it misses
 *                      the TLB every 4 KiB and the hardware prefetchers stop
 *                      at every page boundary. Measured in
 *                      doc/measurements.md ("Speed"). Falls back to MAP,
 *                      and says so in weights_copied, when transparent
 *                      huge pages are off ("never"), madvise refuses, the
 *                      copy would not fit in MemAvailable with 1 GiB to
 *                      spare, or mmap fails.
 *  MODEL_WEIGHTS_AUTO: HUGE when the matrices are at least 16 MiB (below
 *                      that the 4 KiB pages fit the TLB), else MAP.
 * The default is AUTO; the environment variable EGANG_WEIGHTS=map|huge|auto
 * overrides it for every command. A copy of at least 256 MiB shows its
 * progress on stderr when that is a terminal and log_quiet is off. */
typedef enum model_weights {
	MODEL_WEIGHTS_AUTO,
	MODEL_WEIGHTS_MAP,
	MODEL_WEIGHTS_HUGE,
} model_weights_t;
/* Sets the process default (model_load reads it; EGANG_WEIGHTS wins). */
void model_set_weights(model_weights_t mode);

/* Loads a model: GGUF when the file starts with "GGUF", else a llama2.c
 * checkpoint, which needs tok_path (a llama2.c tokenizer.bin); for GGUF a
 * tok_path overrides the embedded tokenizer. NULL + err_get() naming the
 * field and offset on any malformed input. */
model_t *model_load(const char *path, const char *tok_path);
void model_free(model_t *m);
/* The vocabulary trie that grammar masks walk (model/grammar.h), for
 * logits of cfg.vocab_size: built on the first call (any thread; two
 * racing callers build it twice and one copy is dropped) and kept until
 * model_free. NULL + err_get() when memory ran out. */
const struct grammar_vocab *model_grammar_vocab(const model_t *m);

/* Bytes decode streams from t per token: its packed copy's (Q5_0's is
 * 34/22 of its rows', kernels.h) plus the rows past its last whole group,
 * or its rows as stored when it has no packed copy. */
uint64_t tensor_stream_bytes(const tensor_t *t);
/* Bytes of weights read to decode one token (every matrix once, each as
 * tensor_stream_bytes). */
uint64_t model_bytes_per_token(const model_t *m);
/* Number of parameters. */
uint64_t model_n_params(const model_t *m);

/* ---- synthetic models ---- */
typedef struct synth_shape {
	const char *name;
	model_arch_t arch;
	int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab, ctx;
	float rope_theta, rms_eps;
	int tied; /* classifier shares the embedding */
	tokenizer_kind_t tok_kind;
	/* 0 where the architecture has no such fact */
	int32_t head_dim;      /* attention.key_length when not dim / n_heads */
	int32_t swa_window;    /* attention.sliding_window (gemma3, phi3) */
	float rope_theta_swa;  /* sliding layers' base (gemma3: 10000) */
	float llama3_factor;   /* llama3 rope scaling: factor (low 1, high 4) */
	int32_t rope_orig_ctx; /* rope scaling's original context length */
	/* attention.sliding_window_pattern to write; -1: none (the converter
	 * writes none for gemma3, and llama.cpp assumes 6) */
	int32_t swa_pattern;
	/* a tied classifier's logits with a standard deviation near 1, as the
	 * untied synthetic classifier's (output_norm scaled by sqrt(3 / dim));
	 * set by `synth --flat-logits`, never by a shape */
	int flat_logits;
} synth_shape_t;

extern const synth_shape_t synth_shapes[];
extern const int synth_n_shapes;
const synth_shape_t *synth_find(const char *name);

/* ---- quantization targets (quant.c) ---- */
/* One type for every matrix (preset PURE: rows that are not whole blocks
 * of it fall back, as llama-quantize's), or a llama-quantize preset mix. */
typedef struct quant_mix {
	const char *name; /* "q4_k_m", "q8_0" */
	dtype_t base;     /* the type of the matrices the mix does not raise */
	int preset;       /* 0: pure */
	uint32_t ftype;   /* llama_ftype (general.file_type) */
} quant_mix_t;

/* 0 and *out for a type or preset name (case-insensitive); -1 unknown. */
int quant_mix_from_name(const char *name, quant_mix_t *out);
quant_mix_t quant_mix_pure(dtype_t t);
/* The accepted names, for messages. */
const char *quant_mix_names(void);
/* Whether llama-quantize quantizes a tensor of that name and rank (2-D
 * weights that are not norms). */
bool quant_tensor_quantizable(const char *name, uint32_t n_dims);
/* The type mix q gives the quantizable tensor `name` (GGUF naming,
 * "blk.N.attn_v.weight") with rows of cols elements, in a model of
 * n_layers layers with n_gqa query heads per KV head; tied: the model has
 * no output.weight (token_embd is the classifier). */
dtype_t quant_tensor_type(const quant_mix_t *q, const char *name, int64_t cols,
			  int n_layers, int n_gqa, bool tied);

typedef void (*synth_progress_fn)(void *user, uint64_t done, uint64_t total);
/* Writes a random-weight GGUF of the shape, deterministic from seed, with a
 * working tokenizer inside; n_layers > 0 overrides the layer count. */
int synth_write(const synth_shape_t *s, dtype_t type, uint64_t seed,
		int32_t n_layers, const char *path, synth_progress_fn progress,
		void *user);
/* Per tensor type: how many tensors and bytes the GGUF file holds, and how
 * many bytes one decoded token streams (every matrix once, from its packed
 * copy where it has one: tensor_stream_bytes; one embedding row). */
typedef struct model_type_use {
	int64_t tensors;
	uint64_t file_bytes, token_bytes;
} model_type_use_t;
void model_type_usage(const model_t *m, model_type_use_t use[DTYPE_COUNT]);

/* synth_write with the matrices' types from a mix (quant_tensor_type). */
int synth_write_mix(const synth_shape_t *s, const quant_mix_t *mix, uint64_t seed,
		    int32_t n_layers, const char *path, synth_progress_fn progress,
		    void *user);

/* synth_write_mix with a real vocabulary (tokenizer_load_hf; the model's
 * vocab size becomes its size) and tokenizer.chat_template (may be NULL). */
int synth_write_tok(const synth_shape_t *s, const quant_mix_t *mix, uint64_t seed,
		    int32_t n_layers, const tokenizer_t *tok,
		    const char *chat_template, const char *path,
		    synth_progress_fn progress, void *user);

/* Rewrites GGUF `in` as `out` with the matrices (quant_tensor_quantizable)
 * quantized by mix, on `threads` threads, every key-value copied
 * (general.file_type and general.quantization_version set). An input
 * matrix that is already quantized (and would change type) is refused
 * unless allow_requantize. -1 + err_get() on bad input or a failed write. */
int model_quantize_file(const char *in, const char *out, const quant_mix_t *mix,
			bool allow_requantize, int threads, synth_progress_fn progress,
			void *user);

/* Converts a llama2.c checkpoint + tokenizer.bin into one F32 GGUF with the
 * tokenizer inside. */
int model_convert_llama2c(const char *bin, const char *tok, const char *out);

#endif
