/* SPDX-License-Identifier: MIT */
/*
 * The xe and i915 uAPI structs the submission-hook test and bench issue,
 * laid out as xe_drm.h give them (the sizes
 * are checked), so tests do not depend on the build host's kernel headers.
 */
#ifndef GPUPROF_TESTS_XE_IOCTL_H
#define GPUPROF_TESTS_XE_IOCTL_H

#include <stdint.h>

struct vm_bind_op {
	uint64_t extensions;
	uint32_t obj;
	uint16_t pat_index, pad;
	uint64_t src; /* obj_offset / userptr */
	uint64_t range, addr;
	uint32_t op, flags;
	uint32_t prefetch_mem_region_instance, pad2;
	uint64_t reserved[3];
};
_Static_assert(sizeof(struct vm_bind_op) == 80, "drm_xe_vm_bind_op is 80 bytes");

struct vm_bind {
	uint64_t extensions;
	uint32_t vm_id, exec_queue_id, pad, num_binds;
	union {
		struct vm_bind_op bind;
		uint64_t vector_of_binds;
	};
	uint32_t pad2, num_syncs;
	uint64_t syncs;
	uint64_t reserved[2];
};
_Static_assert(sizeof(struct vm_bind) == 136, "drm_xe_vm_bind is 136 bytes");

struct xe_exec {
	uint64_t extensions;
	uint32_t exec_queue_id, num_syncs;
	uint64_t syncs, address;
	uint16_t num_batch_buffer, pad[3];
	uint64_t reserved[2];
};
_Static_assert(sizeof(struct xe_exec) == 56, "drm_xe_exec is 56 bytes");

struct mmap_offset {
	uint64_t extensions;
	uint32_t handle, flags;
	uint64_t offset;
	uint64_t reserved[2];
};
_Static_assert(sizeof(struct mmap_offset) == 40, "drm_xe_gem_mmap_offset is 40 bytes");

struct i915_exec_object {
	uint32_t handle, relocation_count;
	uint64_t relocs_ptr, alignment, offset, flags, rsvd1, rsvd2;
};
_Static_assert(sizeof(struct i915_exec_object) == 56, "drm_i915_gem_exec_object2 is 56 bytes");

struct i915_execbuffer {
	uint64_t buffers_ptr;
	uint32_t buffer_count, batch_start_offset, batch_len, dr1, dr4, num_cliprects;
	uint64_t cliprects_ptr, flags, rsvd1, rsvd2;
};
_Static_assert(sizeof(struct i915_execbuffer) == 64, "drm_i915_gem_execbuffer2 is 64 bytes");

struct i915_userptr {
	uint64_t user_ptr, user_size;
	uint32_t flags, handle;
};
_Static_assert(sizeof(struct i915_userptr) == 24, "drm_i915_gem_userptr is 24 bytes");

struct i915_mmap {
	uint32_t handle, pad;
	uint64_t offset, size, addr_ptr, flags;
};
_Static_assert(sizeof(struct i915_mmap) == 40, "drm_i915_gem_mmap is 40 bytes");

#endif
