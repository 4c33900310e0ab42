// SPDX-License-Identifier: MIT
/*
 * Each rank's device from TARGET_INFO_GPU (the nsys SQLite schema), so an
 * nsys capture carries the device name (and the comm metrics' default link
 * bandwidth applies as for Kineto's deviceProperties). A rank is (process,
 * CUDA ordinal as the process saw it): TARGET_INFO_CUDA_DEVICE(pid, cudaId)
 * gives the GPU id; without that table, or without a row for the process,
 * the ordinal is taken as the GPU id. Columns are looked up by name; a
 * missing table or column leaves the rank without a device (name unknown).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nsys_int.h"

struct gpu {
	int64_t id;
	struct tl_device d;
};

struct cuda_dev {
	int64_t pid, cuda, gpu;
};

static int32_t col_i32(sqlite3_stmt *s, int i)
{
	int64_t v = sqlite3_column_int64(s, i);

	return sqlite3_column_type(s, i) == SQLITE_INTEGER && v >= 0 && v <= INT32_MAX ? (int32_t)v
										       : -1;
}

/* The name column is TEXT; a StringIds id is accepted too. */
static int64_t gpu_name(struct nsys_imp *m, sqlite3_stmt *s, int i)
{
	const char *t;

	if (sqlite3_column_type(s, i) == SQLITE_INTEGER)
		return nsys_intern_id(m, sqlite3_column_int64(s, i), false);
	t = (const char *)sqlite3_column_text(s, i);
	return t ? nsys_intern(m, t, strnlen(t, 256)) : 0;
}

static int read_gpus(struct nsys_imp *m, struct gpu **out, uint32_t *n)
{
	static const char *const cols[] =
		{"id",		 "name",	   "totalMemory",	 "smCount", "computeMajor",
		 "computeMinor", "threadsPerWarp", "maxThreadsPerBlock", NULL};
	uint32_t cap = 0;
	sqlite3_stmt *s;
	int err, rc;

	err = nsys_select(m, "TARGET_INFO_GPU", cols, "LIMIT 4096", &s);
	if (err)
		return err == -ENOENT ? 0 : err;
	while ((rc = nsys_step(m, s)) == 1) {
		int64_t name = gpu_name(m, s, 1);
		struct gpu *g;

		if (name < 0) {
			rc = (int)name;
			break;
		}
		if (bigalloc_grow((void **)out, &cap, *n + 1, sizeof(**out))) {
			rc = nsys_fail(m, -ENOMEM, "out of memory");
			break;
		}
		g = &(*out)[(*n)++];
		memset(g, 0, sizeof(*g));
		g->id = sqlite3_column_int64(s, 0);
		g->d.name = (uint32_t)name;
		g->d.total_global_mem = sqlite3_column_type(s, 2) == SQLITE_INTEGER
						? sqlite3_column_int64(s, 2)
						: -1;
		g->d.num_sms = col_i32(s, 3);
		g->d.compute_major = col_i32(s, 4);
		g->d.compute_minor = col_i32(s, 5);
		g->d.warp_size = col_i32(s, 6);
		g->d.max_threads_per_block = col_i32(s, 7);
		g->d.max_threads_per_sm = g->d.regs_per_block = g->d.shared_mem_per_block = -1;
	}
	sqlite3_finalize(s);
	return rc < 0 ? rc : 0;
}

static int read_cuda_devs(struct nsys_imp *m, struct cuda_dev **out, uint32_t *n)
{
	static const char *const cols[] = {"pid", "cudaId", "gpuId", NULL};
	uint32_t cap = 0;
	sqlite3_stmt *s;
	int err, rc;

	err = nsys_select(m, "TARGET_INFO_CUDA_DEVICE", cols, "LIMIT 65536", &s);
	if (err)
		return err == -ENOENT ? 0 : err;
	while ((rc = nsys_step(m, s)) == 1) {
		if (sqlite3_column_type(s, 2) != SQLITE_INTEGER)
			continue;
		if (bigalloc_grow((void **)out, &cap, *n + 1, sizeof(**out))) {
			rc = nsys_fail(m, -ENOMEM, "out of memory");
			break;
		}
		(*out)[(*n)++] = (struct cuda_dev){sqlite3_column_int64(s, 0),
						   sqlite3_column_int64(s, 1),
						   sqlite3_column_int64(s, 2)};
	}
	sqlite3_finalize(s);
	return rc < 0 ? rc : 0;
}

int nsys_read_devices(struct nsys_imp *m)
{
	struct gpu *gpus = NULL;
	struct cuda_dev *cd = NULL;
	uint32_t ngpus = 0, ncd = 0;
	int err;

	if ((err = read_gpus(m, &gpus, &ngpus)) || !ngpus || (err = read_cuda_devs(m, &cd, &ncd)))
		goto out;
	for (uint32_t i = 0; i < m->nranks; i++) {
		struct nsys_rank *nr = &m->ranks[i];
		int64_t id = nr->dev;

		for (uint32_t k = 0; k < ncd; k++)
			if (cd[k].pid == (int64_t)NSYS_PID(nr->gpid) && cd[k].cuda == nr->dev) {
				id = cd[k].gpu;
				break;
			}
		for (uint32_t k = 0; k < ngpus; k++) {
			if (gpus[k].id != id)
				continue;
			if (!(nr->r->devices = malloc(sizeof(*nr->r->devices)))) {
				err = nsys_fail(m, -ENOMEM, "out of memory");
				goto out;
			}
			nr->r->devices[0] = gpus[k].d;
			nr->r->devices[0].id =
				(int32_t)(nr->dev >= 0 && nr->dev <= INT32_MAX ? nr->dev : -1);
			nr->r->ndevices = 1;
			break;
		}
	}
out:
	free(gpus);
	free(cd);
	return err;
}
