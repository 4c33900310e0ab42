// SPDX-License-Identifier: MIT
/*
 * The symbolizer's parsers on hostile input: malformed ELF files (truncated,
 * garbage section and program headers, random corruption), maps and
 * perf-map text, kallsyms text, and the CAPSEC_SYMBOLS codec (round trip,
 * then every truncation and many mutations of a valid section).
 *
 * argv: libsymtest.so
 */
#include "test.h"

#include "sym/sym_internal.h"
#include "sym/symtab.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *lib_path;
static char tmpdir[] = "/tmp/gpuprof-symparse-XXXXXX";

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf = NULL;
	if (fd < 0 || sym_read_all(fd, 64u << 20, &buf, len) < 0)
		buf = NULL;
	if (fd >= 0)
		close(fd);
	return (unsigned char *)buf;
}

/* Write bytes to a file and run the loader on it; lookups on a success. */
static int load_bytes(const unsigned char *b, size_t len)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/obj", tmpdir);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, b, len) != (ssize_t)len)
		return -EIO;
	struct symobj_opts op = {.max_symbols = 1000, .lines = true, .debug_dir = tmpdir};
	struct sym_obj *o = NULL;
	uint8_t id[SYM_BUILD_ID_MAX];
	size_t idlen;
	symobj_read_build_id(fd, id, &idlen);
	int r = symobj_load(fd, &op, &o);
	if (r == 0) {
		for (uint64_t a = 0; a < 0x4000; a += 0x40) {
			uint64_t va;
			char line[256];
			if (symobj_file_to_vaddr(o, a, &va))
				symobj_lookup(o, va);
			symobj_lookup(o, a);
			symobj_srcline(o, a, line, sizeof(line));
		}
		symobj_free(o);
	}
	close(fd);
	unlink(path);
	return r;
}

static void test_malformed_elf(void)
{
	size_t len;
	unsigned char *orig = slurp(lib_path, &len);
	CHECK(orig && len > 1024);
	if (!orig)
		return;
	unsigned char *b = malloc(len);
	CHECK_EQ_INT(load_bytes(orig, len), 0);
	/* truncated anywhere */
	for (size_t cut = 0; cut < len; cut += cut < 256 ? 7 : len / 61)
		load_bytes(orig, cut);
	CHECK_EQ_INT(load_bytes(orig, 3), -ENOEXEC);
	CHECK_EQ_INT(load_bytes((const unsigned char *)"not an elf file at all", 22), -ENOEXEC);
	/* garbage section header table: offset, count, entry size, strndx */
	static const size_t fields[] = {0x28, 0x3c, 0x3a, 0x3e, 0x20, 0x38, 0x36};
	for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
		for (int k = 0; k < 8; k++) {
			memcpy(b, orig, len);
			uint64_t v = next_rand();
			memcpy(b + fields[f], &v, fields[f] == 0x28 || fields[f] == 0x20 ? 8 : 2);
			load_bytes(b, len);
		}
	/* garbage inside the section headers and anywhere */
	uint64_t shoff;
	memcpy(&shoff, orig + 0x28, 8);
	for (int k = 0; k < 2000; k++) {
		memcpy(b, orig, len);
		size_t n = 1 + next_rand() % 16;
		for (size_t i = 0; i < n; i++) {
			size_t at = k % 2 && shoff < len ? shoff + next_rand() % (len - shoff)
							 : next_rand() % len;
			b[at] = (unsigned char)next_rand();
		}
		load_bytes(b, len);
	}
	free(b);
	free(orig);
}

static void test_maps_parse(void)
{
	static const char text[] =
	    "55d4c4a0e000-55d4c4a10000 r--p 00000000 08:01 1234 /usr/bin/cat\n"
	    "55d4c4a10000-55d4c4a15000 r-xp 00002000 08:01 1234 /usr/bin/cat\n"
	    "7f0000000000-7f0000001000 r-xp 00000000 00:00 0 \n"
	    "7f0000002000-7f0000003000 r-xp 00001000 fd:02 77 /opt/my lib.so (deleted)\n"
	    "7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0                  [vdso]\n"
	    "garbage\n"
	    "ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]";
	struct sym_maps *m;
	CHECK_EQ_INT(procmaps_parse(text, sizeof(text) - 1, 1, &m), 0);
	CHECK_EQ_INT(m->n, 5);
	const struct sym_map *x = procmaps_find(m, 0x55d4c4a10010);
	CHECK(x && x->kind == SYM_MAP_FILE && x->off == 0x2000 && x->ino == 1234);
	CHECK_STREQ(x ? sym_map_path(m, x) : NULL, "/usr/bin/cat");
	CHECK(procmaps_find(m, 0x55d4c4a0e010) == NULL); /* not executable */
	x = procmaps_find(m, 0x7f0000000800);
	CHECK(x && x->kind == SYM_MAP_ANON);
	x = procmaps_find(m, 0x7f0000002000);
	CHECK(x && x->deleted && x->dev_major == 0xfd);
	CHECK_STREQ(x ? sym_map_path(m, x) : NULL, "/opt/my lib.so");
	x = procmaps_find(m, 0x7ffc00000001);
	CHECK(x && x->kind == SYM_MAP_SPECIAL);
	CHECK(procmaps_find(m, 0x7ffc00002000) == NULL);
	procmaps_free(m);
	CHECK_EQ_INT(procmaps_read("/nonexistent", 1, &m), -ENOENT);
}

/* procmaps_read() (PROCMAP_QUERY where the kernel has it) and the parse of
 * the text give the same snapshot of this process, a deleted file's
 * executable mapping included. */
static void test_procmaps_read_matches_text(void)
{
	char path[] = "/tmp/gpuprof-symparse-exec-XXXXXX", *text = NULL;
	struct sym_maps *q = NULL, *t = NULL;
	size_t len = 0;
	void *exec;
	int fd = mkstemp(path);

	CHECK(fd >= 0);
	CHECK(ftruncate(fd, 4096) == 0);
	exec = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	CHECK(exec != MAP_FAILED);
	close(fd);
	unlink(path);
	CHECK_EQ_INT(procmaps_read("/proc", (uint32_t)getpid(), &q), 0);
	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK_EQ_INT(sym_read_all(fd, SYM_MAX_MAPS_BYTES, &text, &len), 0);
	close(fd);
	CHECK_EQ_INT(procmaps_parse(text, len, (uint32_t)getpid(), &t), 0);
	/* the text's last line may be [vsyscall], the kernel's gate page,
	 * which is no mapping of the process: the ioctl does not list it */
	if (t && t->n && !strcmp(sym_map_path(t, &t->m[t->n - 1]), "[vsyscall]"))
		t->n--;
	CHECK(q && t && q->n == t->n);
	for (size_t i = 0; q && t && i < q->n && i < t->n; i++) {
		const struct sym_map *a = &q->m[i], *b = &t->m[i];

		CHECK_EQ_U64(a->start, b->start);
		CHECK_EQ_U64(a->end, b->end);
		CHECK_EQ_U64(a->off, b->off);
		CHECK_EQ_U64(a->ino, b->ino);
		CHECK_EQ_INT((int)a->dev_major, (int)b->dev_major);
		CHECK_EQ_INT((int)a->dev_minor, (int)b->dev_minor);
		CHECK_EQ_INT(a->kind, b->kind);
		CHECK_EQ_INT(a->deleted, b->deleted);
		CHECK_STREQ(sym_map_path(q, a), sym_map_path(t, b));
	}
	{
		const struct sym_map *x = q ? procmaps_find(q, (uint64_t)(uintptr_t)exec) : NULL;

		CHECK(x && x->deleted && x->kind == SYM_MAP_FILE);
		CHECK_STREQ(x ? sym_map_path(q, x) : NULL, path);
	}
	munmap(exec, 4096);
	free(text);
	procmaps_free(q);
	procmaps_free(t);
}

static void test_jitmap_parse(void)
{
	static const char text[] = "1000 100 first\n"
				   "0x1000 10 second name with spaces\r\n"
				   "zzz 10 bad\n"
				   "2000 0 empty\n"
				   "ffffffffffffffff 10 wraps\n"
				   "11112222333344445 10 toolong\n"
				   "3000 10 last";
	struct jitmap *j;
	CHECK_EQ_INT(jitmap_parse(text, sizeof(text) - 1, &j), 0);
	CHECK_EQ_INT(j->n, 3);
	CHECK_STREQ(jitmap_lookup(j, 0x1005), "second name with spaces"); /* later wins */
	CHECK_STREQ(jitmap_lookup(j, 0x1050), "first");
	CHECK(jitmap_lookup(j, 0x1100) == NULL);
	CHECK_STREQ(jitmap_lookup(j, 0x3000), "last");
	CHECK(jitmap_lookup(j, 0x2000) == NULL);
	jitmap_free(j);
}

static void test_kallsyms_parse(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/kallsyms", tmpdir);
	FILE *f = fopen(path, "w");
	fputs("ffffffff81000000 T _stext\n"
	      "ffffffff81000000 T _text\n"
	      "ffffffff81001000 t helper\n"
	      "ffffffff81002000 D some_data\n"
	      "ffffffff81003000 W weak_fn\n"
	      "bogus line\n"
	      "ffffffffc0001000 t mod_fn\t[mymod]\n",
	      f);
	fclose(f);
	struct ksyms *k;
	const char *mod;
	CHECK_EQ_INT(ksyms_load(path, &k), 0);
	CHECK_EQ_INT(k->n, 5);
	CHECK_STREQ(ksyms_lookup(k, 0xffffffff81000010, NULL), "_stext");
	CHECK_STREQ(ksyms_lookup(k, 0xffffffff81002010, NULL), "helper"); /* data skipped */
	CHECK_STREQ(ksyms_lookup(k, 0xffffffffc0001004, &mod), "mod_fn");
	CHECK_STREQ(mod, "mymod");
	CHECK(ksyms_lookup(k, 0xffffffff80000000, NULL) == NULL);
	CHECK(ksyms_lookup(k, 0xffffffffc1000000, NULL) == NULL); /* far past the last */
	ksyms_free(k);

	f = fopen(path, "w");
	fputs("0000000000000000 T _stext\n0000000000000000 t helper\n", f);
	fclose(f);
	CHECK_EQ_INT(ksyms_load(path, &k), 0);
	CHECK(k->restricted);
	CHECK(ksyms_lookup(k, 0xffffffff81000010, NULL) == NULL);
	ksyms_free(k);
	unlink(path);
	CHECK_EQ_INT(ksyms_modules_hash("/nonexistent"), 0);
}

/* The GNU build id among ELF notes (/sys/kernel/notes' layout): found
 * after another note, absent, and a truncated list. */
static void test_notes_build_id(void)
{
	uint8_t buf[128], id[SYM_BUILD_ID_MAX];
	uint32_t h[3] = {6, 4, 1}; /* "Linux\0" (padded to 8), desc 4 bytes, type 1 */
	size_t n = 0;
	memcpy(buf, h, 12);
	memcpy(buf + 12, "Linux\0\0\0", 8);
	memcpy(buf + 20, "\x01\x02\x03\x04", 4);
	n = 24;
	CHECK_EQ_INT(ksyms_notes_build_id(buf, n, id), 0);
	uint32_t g[3] = {4, 20, 3}; /* NT_GNU_BUILD_ID */
	memcpy(buf + n, g, 12);
	memcpy(buf + n + 12, "GNU", 4);
	for (int i = 0; i < 20; i++)
		buf[n + 16 + i] = (uint8_t)(0xa0 + i);
	n += 36;
	CHECK_EQ_INT(ksyms_notes_build_id(buf, n, id), 20);
	CHECK(id[0] == 0xa0 && id[19] == 0xb3);
	for (size_t cut = 0; cut < n; cut++)
		CHECK_EQ_INT(ksyms_notes_build_id(buf, cut, id), 0);
	g[1] = 0xffffffff;
	memcpy(buf + 24, g, 12);
	CHECK_EQ_INT(ksyms_notes_build_id(buf, n, id), 0);
	size_t len = 99;
	CHECK_EQ_INT(ksyms_build_id("/nonexistent/notes", id, &len), -ENOENT);
	CHECK_EQ_INT(len, 0);
}

static void build_table(void **buf, size_t *len, bool lines)
{
	struct sym_table_builder *b;
	uint32_t n[4], l[4];
	CHECK_EQ_INT(sym_tb_new(lines, &b), 0);
	sym_tb_name(b, "main", 4, &n[0]);
	sym_tb_name(b, "work", 4, &n[1]);
	sym_tb_name(b, "main", 4, &n[2]);
	sym_tb_name(b, "x.c:3", 5, &l[0]);
	CHECK_EQ_U64(n[0], n[2]);
	l[1] = l[2] = 0;
	uint32_t f1[] = {n[1], n[0]}, f2[] = {n[0]};
	CHECK_EQ_INT(sym_tb_add(b, 7, 2, f1, l, 2, 0), 0);
	CHECK_EQ_INT(sym_tb_add(b, 5, 9, f2, NULL, 0, 1), 0);
	CHECK_EQ_INT(sym_tb_add(b, 7, 1, f2, NULL, 1, 0), 0);
	CHECK_EQ_INT(sym_tb_encode(b, buf, len), 0);
	sym_tb_free(b);
}

static void test_symtab_roundtrip(void)
{
	void *buf;
	size_t len, nl;
	struct sym_table *t;
	struct sym_frames f;
	build_table(&buf, &len, true);
	CHECK_EQ_INT(sym_table_decode(buf, len, &t, NULL, 0), 0);
	CHECK_EQ_INT(sym_table_entries(t), 3);
	CHECK(sym_table_has_lines(t));
	CHECK(sym_table_find(t, 7, 2, &f));
	CHECK_EQ_INT(f.nuser, 2);
	const char *s = sym_table_name(t, f.names[0], &nl);
	CHECK(nl == 4 && !memcmp(s, "work", 4));
	s = sym_table_name(t, f.lines[0], &nl);
	CHECK(nl == 5 && !memcmp(s, "x.c:3", 5));
	CHECK(sym_table_find(t, 5, 9, &f) && f.nkernel == 1);
	CHECK(!sym_table_find(t, 5, 8, &f));
	s = sym_table_name(t, 999, &nl);
	CHECK(nl == 0 && s);
	sym_table_free(t);

	struct sym_table_builder *b;
	uint32_t x = 0;
	sym_tb_new(false, &b);
	sym_tb_add(b, 1, 1, &x, NULL, 1, 0);
	sym_tb_add(b, 1, 1, &x, NULL, 1, 0);
	void *dup;
	size_t duplen;
	CHECK_EQ_INT(sym_tb_encode(b, &dup, &duplen), -EEXIST);
	sym_tb_free(b);
	free(buf);
}

/* Version 2: mappings per frame. A table without any is still written as
 * version 1 (older readers take it); both decode. */
static void build_maps(void **buf, size_t *len)
{
	struct sym_table_builder *b;
	uint32_t n[2], mi[2];
	struct sym_mapping m = {.start = 0x400000, .limit = 0x401000, .offset = 0x1000,
				.pid = 7, .flags = SYMTAB_MAPF_SYMBOLS};
	CHECK_EQ_INT(sym_tb_new(false, &b), 0);
	sym_tb_name(b, "main", 4, &n[0]);
	sym_tb_name(b, "vfs_read", 8, &n[1]);
	sym_tb_name(b, "/usr/bin/app", 12, &m.file);
	sym_tb_name(b, "0123abcd", 8, &m.build_id);
	CHECK_EQ_INT(sym_tb_map(b, &m, &mi[0]), 0);
	CHECK_EQ_INT(mi[0], 1);
	mi[1] = 0; /* kernel frame: no mapping */
	CHECK_EQ_INT(sym_tb_add_maps(b, 7, 1, n, NULL, mi, 1, 1), 0);
	CHECK_EQ_INT(sym_tb_encode(b, buf, len), 0);
	sym_tb_free(b);
}

static void test_symtab_maps(void)
{
	void *buf;
	size_t len, nl;
	struct sym_table *t;
	struct sym_frames f;
	char why[128];
	build_maps(&buf, &len);
	CHECK_EQ_INT(((unsigned char *)buf)[4], 2);
	CHECK_EQ_INT(sym_table_decode(buf, len, &t, why, sizeof(why)), 0);
	CHECK_EQ_INT(sym_table_nmaps(t), 1);
	CHECK(sym_table_find(t, 7, 1, &f) && f.maps);
	const struct sym_mapping *m = f.maps ? sym_table_map(t, f.maps[0]) : NULL;
	CHECK(m && m->start == 0x400000 && m->limit == 0x401000 && m->offset == 0x1000);
	CHECK(m && m->pid == 7 && m->flags == SYMTAB_MAPF_SYMBOLS);
	const char *s = m ? sym_table_name(t, m->build_id, &nl) : "";
	CHECK(nl == 8 && !memcmp(s, "0123abcd", 8));
	s = m ? sym_table_name(t, m->file, &nl) : "";
	CHECK(nl == 12 && !memcmp(s, "/usr/bin/app", 12));
	CHECK(f.maps && f.maps[1] == 0);
	CHECK(sym_table_map(t, 0) == NULL && sym_table_map(t, 2) == NULL);
	sym_table_free(t);
	/* the frame-mapping array is last before the blob; name a mapping
	 * that does not exist, then take the flag away (sizes disagree) */
	unsigned char *q = buf;
	size_t fm = len - (4 + 8 + 12 + 8) - 8; /* blob: main vfs_read /usr/bin/app 0123abcd */
	q[fm] = 2;
	CHECK_EQ_INT(sym_table_decode(buf, len, &t, why, sizeof(why)), -EBADMSG);
	CHECK(strstr(why, "mapping 2 of 1") != NULL);
	q[fm] = 1;
	q[6] &= (unsigned char)~SYMTAB_F_MAPS;
	CHECK_EQ_INT(sym_table_decode(buf, len, &t, why, sizeof(why)), -EBADMSG);
	/* a version 1 header may not claim mappings */
	q[6] |= SYMTAB_F_MAPS;
	q[4] = 1;
	CHECK_EQ_INT(sym_table_decode(buf, len, &t, why, sizeof(why)), -EBADMSG);
	free(buf);
	/* no mappings: version 1, and frames report none */
	build_table(&buf, &len, false);
	CHECK_EQ_INT(((unsigned char *)buf)[4], 1);
	CHECK_EQ_INT(sym_table_decode(buf, len, &t, NULL, 0), 0);
	CHECK(sym_table_find(t, 7, 2, &f) && f.maps == NULL);
	CHECK_EQ_INT(sym_table_nmaps(t), 0);
	sym_table_free(t);
	free(buf);
}

/* Every truncation and 20000 random mutations of buf (freed) decode or
 * are refused cleanly. */
static void hostile(void *buf, size_t len)
{
	char why[128];
	struct sym_table *t;
	for (size_t cut = 0; cut < len; cut++)
		CHECK_EQ_INT(sym_table_decode(buf, cut, &t, why, sizeof(why)), -EBADMSG);
	unsigned char *m = malloc(len + 8);
	int ok = 0;
	for (int k = 0; k < 20000; k++) {
		memcpy(m, buf, len);
		size_t n = 1 + next_rand() % 4;
		for (size_t i = 0; i < n; i++)
			m[next_rand() % len] = (unsigned char)next_rand();
		if (sym_table_decode(m, len, &t, why, sizeof(why)) == 0) {
			struct sym_frames f;
			size_t nl;
			ok++;
			for (uint32_t pid = 0; pid < 9; pid++)
				for (uint32_t st = 0; st < 10; st++)
					if (sym_table_find(t, pid, st, &f))
						for (size_t i = 0; i < (size_t)f.nuser + f.nkernel;
						     i++) {
							sym_table_name(t, f.names[i], &nl);
							const struct sym_mapping *mp =
							    f.maps ? sym_table_map(t, f.maps[i])
								   : NULL;
							if (mp)
								sym_table_name(t, mp->file, &nl);
						}
			sym_table_free(t);
		}
	}
	fprintf(stderr, "  %d of 20000 mutations still decoded\n", ok);
	CHECK_EQ_INT(sym_table_decode(NULL, 0, &t, why, sizeof(why)), -EBADMSG);
	free(m);
	free(buf);
}

static void test_symtab_hostile(void)
{
	void *buf;
	size_t len;
	build_table(&buf, &len, true);
	hostile(buf, len);
	build_maps(&buf, &len);
	hostile(buf, len);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		TEST_SKIP("usage: %s libsymtest.so", argv[0]);
	lib_path = argv[1];
	if (!mkdtemp(tmpdir))
		TEST_SKIP("cannot create a temporary directory");
	RUN(test_malformed_elf);
	RUN(test_maps_parse);
	RUN(test_procmaps_read_matches_text);
	RUN(test_jitmap_parse);
	RUN(test_kallsyms_parse);
	RUN(test_notes_build_id);
	RUN(test_symtab_roundtrip);
	RUN(test_symtab_maps);
	RUN(test_symtab_hostile);
	rmdir(tmpdir);
	return test_summary();
}
