// SPDX-License-Identifier: MIT
/* PROCMAP_QUERY (procmapq.h). */
#include "procmapq.h"

#include <errno.h>
#include <sys/ioctl.h>

/*
 * Declared here with our own names because the C library's kernel headers
 * may predate it (Debian 12 ships 6.1's); the layout is the kernel's ABI,
 * struct procmap_query in include/uapi/linux/fs.h.
 */
struct pmq_raw {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t vma_name_size, build_id_size;
	uint64_t vma_name_addr, build_id_addr;
};

#define PMQ_IOCTL _IOWR('f', 17, struct pmq_raw)
#define PMQ_COVERING_OR_NEXT 0x10

static int query(int fd, uint64_t addr, uint64_t flags, struct pmq_raw *q, char *name, size_t size)
{
	*q = (struct pmq_raw){
		.size = sizeof(*q),
		.query_flags = flags,
		.query_addr = addr,
		.vma_name_size = name && size ? (uint32_t)(size > UINT32_MAX ? UINT32_MAX : size)
					      : 0,
		.vma_name_addr = name && size ? (uint64_t)(uintptr_t)name : 0,
	};
	if (name && size)
		name[0] = '\0';
	if (ioctl(fd, PMQ_IOCTL, q) < 0)
		return -errno;
	/* vma_name_size counts the terminating NUL; 0: no name */
	if (name && size && !q->vma_name_size)
		name[0] = '\0';
	return 0;
}

int pmq_next(int maps_fd, uint64_t addr, uint64_t want_flags, struct pmq_map *m, char *name,
	     size_t size)
{
	struct pmq_raw q;
	int r = query(maps_fd, addr, PMQ_COVERING_OR_NEXT | (want_flags & 0x0f), &q, name, size);

	if (r < 0)
		return r;
	*m = (struct pmq_map){
		.start = q.vma_start,
		.end = q.vma_end,
		.off = q.vma_offset,
		.ino = q.inode,
		.dev_major = q.dev_major,
		.dev_minor = q.dev_minor,
		.flags = q.vma_flags,
	};
	return 0;
}

int pmq_name(int maps_fd, uint64_t addr, char *name, size_t size)
{
	struct pmq_raw q;

	return query(maps_fd, addr, 0, &q, name, size);
}
