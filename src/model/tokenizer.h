/* Tokenizers: SentencePiece-style BPE ("llama": scores, byte fallback
 * <0xNN>, a leading dummy space, U+2581 for spaces) and byte-level BPE
 * ("gpt2": merge ranks, the GPT-2 byte-to-unicode map, a regex pre-tokenizer
 * chosen by tokenizer.ggml.pre).
 *
 * Internally pieces are stored as GGUF stores them (U+2581 for spaces in
 * "llama" vocabularies, "<s>"/"</s>" for BOS/EOS); a llama2.c tokenizer.bin
 * is converted on load ("\n<s>\n" -> "<s>", ' ' -> U+2581). */
#ifndef EGANG_TOKENIZER_H
#define EGANG_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/gguf.h"

typedef enum tokenizer_kind {
	TOKENIZER_LLAMA, /* SentencePiece BPE */
	TOKENIZER_GPT2,  /* byte-level BPE */
	TOKENIZER_COUNT
} tokenizer_kind_t;

typedef struct tokenizer tokenizer_t; /* opaque */

/* llama2.c tokenizer.bin: uint32 max_token_length, then vocab_size records
 * { float32 score; int32 len; len bytes }. vocab_size comes from the model.
 * NULL + err_get() on a malformed or short file. */
tokenizer_t *tokenizer_load_llama2c(const char *path, int32_t vocab_size);
/* From GGUF metadata (tokenizer.ggml.*). NULL + err_get() on missing or
 * malformed keys (empty vocabulary, ids out of range, merges naming unknown
 * pieces, an unknown tokenizer.ggml.pre: refused, not guessed). A llama
 * vocabulary honours tokenizer.ggml.add_space_prefix = false. */
tokenizer_t *tokenizer_load_gguf(const gguf_t *g);
/* A deterministic synthetic vocabulary of n_vocab tokens of the given kind
 * that encodes any text (byte fallback / byte tokens) and decodes back.
 * llama: <unk> <s> </s>, <0x00>..<0xFF>, U+2581 and printable ASCII, then
 * merged pieces with decreasing scores. gpt2: the 256 byte-level chars in
 * GPT-2's id order, <|endoftext|> (BOS) <|im_start|> <|im_end|> (EOS), then
 * merges; its pre-tokenizer follows the size (49152 smollm, 151936 qwen2,
 * 128256 llama-bpe, else gpt2). n_vocab 259..2^26, else NULL. */
tokenizer_t *tokenizer_synth(tokenizer_kind_t kind, int32_t n_vocab,
			     uint64_t seed);
void tokenizer_free(tokenizer_t *t);

/* GGUF token types (tokenizer.ggml.token_type), as llama.cpp numbers them. */
enum {
	TOKENIZER_TYPE_NORMAL = 1,
	TOKENIZER_TYPE_UNKNOWN = 2,
	TOKENIZER_TYPE_CONTROL = 3,
	TOKENIZER_TYPE_USER_DEFINED = 4,
	TOKENIZER_TYPE_UNUSED = 5,
	TOKENIZER_TYPE_BYTE = 6,
};

/* A vocabulary given piece by piece (tokenizer_hf.c builds one from a
 * Hugging Face tokenizer.json). Pieces in GGUF spelling (U+2581 for spaces
 * in a llama vocabulary, byte-level chars in a gpt2 one). */
typedef struct tokenizer_spec {
	tokenizer_kind_t kind;
	int32_t n;
	const char *const *pieces; /* (n), NUL-terminated; NULL = "" */
	const float *scores;       /* (n) or NULL */
	const int32_t *types;      /* (n) GGUF token types, or NULL (normal) */
	int32_t bos, eos, unk, pad; /* -1 if none */
	int add_bos, add_eos;      /* 1, 0, or -1: llama.cpp's default */
	bool no_space_prefix;      /* llama: add_space_prefix false */
	const char *pre;           /* gpt2: tokenizer.ggml.pre */
	const char *const *merges; /* gpt2: (n_merges) "left right" */
	int32_t n_merges;
} tokenizer_spec_t;
/* NULL + err_get() on bad input (merges naming unknown pieces, an unknown
 * pre-tokenizer, ids out of range). */
tokenizer_t *tokenizer_build(const tokenizer_spec_t *spec);
/* From a Hugging Face tokenizer.json (+ tokenizer_config.json, may be NULL)
 * as llama.cpp's convert_hf_to_gguf.py reads them: a byte-level BPE becomes
 * the gpt2 kind (pre-tokenizer named from its Split regex: llama-bpe,
 * qwen2), a BPE with byte_fallback (a SentencePiece conversion, Gemma)
 * the llama kind with scores from the merge ranks. The vocabulary is
 * padded with [PADn] unused tokens up to min_vocab. *chat_template (may be
 * NULL): the config's template, malloc'd, or NULL. NULL + err_get(). */
tokenizer_t *tokenizer_load_hf(const char *json_path, const char *config_path,
			       int32_t min_vocab, char **chat_template);

/* Writes tokenizer.ggml.* keys (model, tokens, scores, token_type, merges,
 * bos/eos/unk ids, pre). */
void tokenizer_write_gguf(const tokenizer_t *t, gguf_writer_t *w);

tokenizer_kind_t tokenizer_kind(const tokenizer_t *t);
int32_t tokenizer_n_vocab(const tokenizer_t *t);
int32_t tokenizer_bos(const tokenizer_t *t); /* -1 if none */
int32_t tokenizer_eos(const tokenizer_t *t); /* -1 if none */
int32_t tokenizer_unk(const tokenizer_t *t); /* -1 if none */
/* GGUF token type of id (TOKENIZER_TYPE_*), -1 out of range. */
int32_t tokenizer_type(const tokenizer_t *t, int32_t id);
/* Whether the vocabulary asks for BOS (tokenizer.ggml.add_bos_token; else
 * true for llama and the llama3 pre-tokenizer, false for other gpt2). */
bool tokenizer_add_bos(const tokenizer_t *t);
/* The gpt2 pre-tokenizer name as stored ("" if the key was absent, which
 * means llama.cpp's "default"); NULL for the llama kind. */
const char *tokenizer_pre(const tokenizer_t *t);
/* Token id of an exact piece, -1 if absent. */
int32_t tokenizer_find(const tokenizer_t *t, const char *piece);
/* The stored piece of id (GGUF spelling), NULL if out of range. */
const char *tokenizer_piece(const tokenizer_t *t, int32_t id);

/* Encodes UTF-8 text (any bytes; invalid UTF-8 goes through byte fallback)
 * into ids, BOS first when add_bos and the vocabulary has one. Returns the
 * count (may exceed max: then only max were written), -1 on error. The
 * llama kind adds a leading space as SentencePiece does (llama2.c run.c
 * semantics, text "" -> no dummy space); a character with neither a piece
 * nor byte pieces becomes <unk>. The gpt2 kind first matches control and
 * user-defined tokens (<|im_start|>) written in the text, longest first. */
int64_t tokenizer_encode(const tokenizer_t *t, const char *text, size_t len,
			 bool add_bos, int32_t *ids, int64_t max);
/* llama_tokenize()'s semantics (llama.cpp's llama-vocab.cpp): the text
 * is first split at special tokens (user-defined ones always, control and
 * unknown ones when parse_special), longest token first; the llama kind
 * adds its space prefix to a text fragment that follows BOS or a special
 * token (or starts the text); the gpt2 kind reads the text as llama.cpp's
 * unicode_cpts_from_utf8 does (each byte of invalid UTF-8 becomes U+FFFD,
 * an overlong form its shortest one). BOS (EOS) when add_special and the
 * vocabulary asks for it. Count and buffer as tokenizer_encode. */
int64_t tokenizer_tokenize(const tokenizer_t *t, const char *text, size_t len,
			   bool add_special, bool parse_special, int32_t *ids,
			   int64_t max);
/* The gpt2 pre-tokenizer's split of text (special tokens are not looked
 * for): writes the end offset of each chunk to ends (at most max) and
 * returns the chunk count; -1 for the llama kind or on error. For tests and
 * debugging. */
int64_t tokenizer_pre_split(const tokenizer_t *t, const char *text,
			    size_t len, size_t *ends, int64_t max);
/* The bytes that token id contributes to the text after token prev:
 * U+2581 -> ' ', <0xNN> -> that byte, the leading space after BOS dropped,
 * BOS/EOS/control tokens -> "". Returns the byte count written to out
 * (cap >= 64 always suffices... unless a piece is longer: then it is
 * truncated at cap), -1 if id is out of range. */
int tokenizer_decode(const tokenizer_t *t, int32_t prev, int32_t id,
		     char *out, size_t cap);

#endif
