// SPDX-License-Identifier: MIT
/* The importer's SHA-256 against the FIPS 180-4 examples, fed whole and in
 * odd pieces, and import_opts.digest covering exactly the bytes imported. */
#include <string.h>

#include "test.h"
#include "timeline/sha256.h"
#include "timeline/timeline.h"

static void hex_of(const void *p, size_t n, size_t piece, char out[SHA256_HEX_LEN + 1])
{
	struct sha256 s;
	const char *c = p;

	sha256_init(&s);
	for (size_t i = 0; i < n; i += piece)
		sha256_update(&s, c + i, n - i < piece ? n - i : piece);
	sha256_hex(&s, out);
}

static void test_vectors(void)
{
	static const char *const two_blocks =
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	char h[SHA256_HEX_LEN + 1], *million = malloc(1000000);
	size_t pieces[] = {1, 3, 55, 56, 63, 64, 65, 1000000};

	CHECK(million != NULL);
	if (!million)
		return;
	hex_of("", 0, 1, h);
	CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	hex_of("abc", 3, 1, h);
	CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		hex_of(two_blocks, strlen(two_blocks), pieces[i], h);
		CHECK(
		    !strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));
	}
	memset(million, 'a', 1000000);
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		hex_of(million, 1000000, pieces[i], h);
		CHECK(
		    !strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"));
	}
	free(million);
}

static void test_import_digest(void)
{
	static const char trace[] =
	    "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"k\", \"cat\": \"kernel\", "
	    "\"pid\": 0, \"tid\": 7, \"ts\": 10, \"dur\": 5}]}\n";
	struct timeline *tl = NULL;
	struct import_result res;
	struct sha256 d;
	struct import_opts o = {.rank = 0, .digest = &d};
	char want[SHA256_HEX_LEN + 1], got[SHA256_HEX_LEN + 1];

	CHECK_EQ_INT(timeline_new(&tl), 0);
	sha256_init(&d);
	CHECK_EQ_INT(timeline_import_buf(trace, strlen(trace), &o, tl, &res), 0);
	CHECK_EQ_INT(d.len, strlen(trace));
	CHECK_EQ_INT(res.bytes_in, strlen(trace));
	sha256_hex(&d, got);
	hex_of(trace, strlen(trace), 64, want);
	CHECK(!strcmp(got, want));
	timeline_free(tl);
}

int main(void)
{
	RUN(test_vectors);
	RUN(test_import_digest);
	return test_summary();
}
