// SPDX-License-Identifier: MIT
/* The importer's XXH64 against the reference library's values (libxxhash
 * 0.8.1, seed 0), fed whole and in odd pieces, and import_opts.digest
 * covering exactly the bytes imported. */
#include <string.h>

#include "test.h"
#include "import/import.h"
#include "timeline/timeline.h"
#include "import/xxh64.h"

static uint64_t hash_of(const void *p, size_t n, size_t piece)
{
	struct xxh64 s;
	const char *c = p;

	xxh64_init(&s);
	for (size_t i = 0; i < n; i += piece)
		xxh64_update(&s, c + i, n - i < piece ? n - i : piece);
	return xxh64_digest(&s);
}

static void test_vectors(void)
{
	static const struct {
		const char *s;
		uint64_t h;
	} v[] = {
	    {"", 0xef46db3751d8e999ull},
	    {"a", 0xd24ec4f1a98c6e5bull},
	    {"abc", 0x44bc2cf5ad770999ull},
	    {"0123456789abcdef0123456789abcdef", 0x642a94958e71e6c5ull},
	    {"0123456789abcdef0123456789abcdef0123456789", 0xa76190c3acf08a1cull},
	};
	static const size_t pieces[] = {1, 3, 7, 31, 32, 33, 4096, 100003};
	static uint8_t big[100003];

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++)
			CHECK_EQ_INT(hash_of(v[i].s, strlen(v[i].s), pieces[k]), v[i].h);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++)
		CHECK_EQ_INT(hash_of(big, sizeof(big), pieces[k]), 0x924a64f3ae9ea839ull);
}

static void test_import_digest(void)
{
	static const char trace[] =
	    "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"k\", \"cat\": \"kernel\", "
	    "\"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": 5}]}\n";
	struct timeline *tl = NULL;
	struct import_result res;
	struct xxh64 d;
	struct import_opts o = {.rank = 0, .digest = &d};

	CHECK_EQ_INT(timeline_new(&tl), 0);
	xxh64_init(&d);
	CHECK_EQ_INT(timeline_import_buf(trace, strlen(trace), &o, tl, &res), 0);
	CHECK_EQ_INT(d.len, strlen(trace));
	CHECK_EQ_INT(res.bytes_in, strlen(trace));
	CHECK_EQ_INT(xxh64_digest(&d), hash_of(trace, strlen(trace), 64));
	timeline_free(tl);
}

int main(void)
{
	RUN(test_vectors);
	RUN(test_import_digest);
	return test_summary();
}
