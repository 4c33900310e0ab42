// SPDX-License-Identifier: MIT
/* A library built without frame pointers, loaded with dlopen() by
 * test_unwind.c: its frames sit between the test's. */
int uwlib_inner(int (*cb)(int), int x);
int uwlib_call(int (*cb)(int), int x);

__attribute__((noinline)) int uwlib_inner(int (*cb)(int), int x)
{
	return cb(x + 1) + 1;
}

__attribute__((noinline)) int uwlib_call(int (*cb)(int), int x)
{
	return uwlib_inner(cb, x * 2) * 3;
}
