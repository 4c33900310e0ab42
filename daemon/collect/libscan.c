// SPDX-License-Identifier: MIT
/* GPU runtime library discovery (libscan.h). */
#include "libscan.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const struct {
	const char *prefix, *name;
} runtimes[GPU_RT_COUNT] = {
	[GPU_RT_ZE] = {"libze_loader.so", "level-zero"},
	[GPU_RT_NEO] = {"libze_intel_gpu.so", "level-zero-neo"},
	[GPU_RT_CUDA] = {"libcuda.so", "cuda"},
	[GPU_RT_HIP] = {"libamdhip64.so", "hip"},
};

const char *libscan_prefix(enum gpu_runtime rt)
{
	return (unsigned)rt < GPU_RT_COUNT ? runtimes[rt].prefix : NULL;
}

const char *libscan_runtime_name(enum gpu_runtime rt)
{
	return (unsigned)rt < GPU_RT_COUNT ? runtimes[rt].name : "unknown";
}

int libscan_match(const char *basename)
{
	for (int i = 0; i < GPU_RT_COUNT; i++) {
		size_t n = strlen(runtimes[i].prefix);
		/* "libcuda.so" must not match "libcudart.so": the prefix
		 * ends at ".so", and what follows is a version or nothing. */
		if (!strncmp(basename, runtimes[i].prefix, n) &&
		    (basename[n] == '\0' || basename[n] == '.'))
			return i;
	}
	return -1;
}

int libscan_pid(const char *proc_dir, uint32_t pid, struct libscan_hit *hits, size_t max)
{
	char path[128], line[4096 + 256];
	size_t n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%" PRIu32 "/maps", proc_dir ? proc_dir : "/proc", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi, off, ino;
		unsigned maj, mnr;
		char perms[8];
		int pos = 0;
		const char *file, *base;
		size_t len;
		int rt;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n",
			   &lo, &hi, perms, &off, &maj, &mnr, &ino, &pos) < 7 ||
		    !pos || perms[2] != 'x' || !ino)
			continue;
		file = line + pos;
		len = strcspn(file, "\n");
		if (file[0] != '/' || len >= sizeof(hits->path))
			continue;
		((char *)file)[len] = '\0';
		/* A replaced file: probes would go to an inode nobody maps. */
		if (len > 10 && !strcmp(file + len - 10, " (deleted)"))
			continue;
		base = strrchr(file, '/') + 1;
		rt = libscan_match(base);
		if (rt < 0)
			continue;
		size_t i;
		for (i = 0; i < n; i++)
			if (hits[i].ino == ino && hits[i].dev == makedev(maj, mnr))
				break;
		if (i == n) {
			if (n == max)
				continue;
			/* All of it: nranges and ranges[] follow path (leaving
			 * them as malloc left them trimmed whole stacks away in
			 * release builds). */
			memset(&hits[n], 0, sizeof(hits[n]));
			hits[n].rt = rt;
			hits[n].dev = makedev(maj, mnr);
			hits[n].ino = ino;
			memcpy(hits[n].path, file, len + 1);
			n++;
		}
		if (hits[i].nranges < LIBSCAN_MAX_RANGES) {
			hits[i].ranges[hits[i].nranges].lo = lo;
			hits[i].ranges[hits[i].nranges].hi = hi;
			hits[i].nranges++;
		}
	}
	fclose(f);
	return (int)n;
}

/* SDT note descriptor: 3 addresses, then "provider\0name\0args\0". */
static bool sdt_matches(const char *desc, size_t len, const char *prov, const char *name)
{
	size_t off = 3 * sizeof(uint64_t), pl = strlen(prov), nl = strlen(name);

	if (len < off + pl + nl + 2)
		return false;
	return !memcmp(desc + off, prov, pl + 1) && !memcmp(desc + off + pl + 1, name, nl + 1);
}

int libscan_symbols(const char *path, const char *const *names, size_t n, bool *present,
		    const char *sdt_provider, const char *sdt_name, bool *has_sdt)
{
	Elf_Scn *scn = NULL;
	int fd, r = 0;
	Elf *e;

	for (size_t i = 0; i < n; i++)
		present[i] = false;
	if (has_sdt)
		*has_sdt = false;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* pread, not mmap: the library is its owner's file, and one truncated
	 * under us would SIGBUS the daemon */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e) {
		r = -EINVAL;
		goto out_fd;
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_DYNSYM) {
			d = elf_getdata(scn, NULL);
			size_t cnt = d && sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
			for (size_t k = 0; k < cnt; k++) {
				GElf_Sym s;
				const char *sn;

				if (!gelf_getsym(d, (int)k, &s) || s.st_shndx == SHN_UNDEF ||
				    GELF_ST_TYPE(s.st_info) != STT_FUNC)
					continue;
				sn = elf_strptr(e, sh.sh_link, s.st_name);
				for (size_t i = 0; sn && i < n; i++)
					if (!present[i] && !strcmp(sn, names[i]))
						present[i] = true;
			}
		} else if (sh.sh_type == SHT_NOTE && has_sdt && sdt_provider) {
			GElf_Nhdr nh;
			size_t off = 0, noff, doff;

			d = elf_getdata(scn, NULL);
			while (d && (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
				/* NT_STAPSDT = 3, owner "stapsdt" */
				if (nh.n_type == 3 && nh.n_namesz == 8 &&
				    !memcmp((char *)d->d_buf + noff, "stapsdt", 8) &&
				    sdt_matches((char *)d->d_buf + doff, nh.n_descsz, sdt_provider,
						sdt_name))
					*has_sdt = true;
			}
		}
	}
	elf_end(e);
out_fd:
	close(fd);
	return r;
}
