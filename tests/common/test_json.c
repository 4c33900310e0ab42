// SPDX-License-Identifier: MIT
/* daemon/json.c: exact integers and valid UTF-8 in every reply. */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "test.h"

static char *print_normalized(cJSON *o)
{
	CHECK(json_reply_normalize(o));
	char *t = cJSON_PrintUnformatted(o);
	cJSON_Delete(o);
	return t;
}

static void test_integers_exact(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "a", 4458676416789000.0); /* %1.15g: 4.458676416789e+15 */
	cJSON_AddNumberToObject(o, "b", -1e15);
	cJSON_AddNumberToObject(o, "c", 0.5);
	cJSON_AddNumberToObject(o, "d", 42);
	json_add_u64(o, "e", UINT64_MAX);
	json_add_i64(o, "f", INT64_MIN);
	json_add_u64(o, "g", 1ull << 53);
	cJSON *arr = cJSON_AddArrayToObject(o, "h");
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(1e18));
	char *t = print_normalized(o);
	CHECK_STREQ(t, "{\"a\":4458676416789000,\"b\":-1000000000000000,\"c\":0.5,\"d\":42,"
		       "\"e\":18446744073709551615,\"f\":-9223372036854775808,"
		       "\"g\":9007199254740992,\"h\":[1000000000000000000]}");
	free(t);
}

static void test_utf8_repaired(void)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "comm", "a\xff" "b\xc0\xaf" "c\xed\xa0\x80");
	cJSON_AddStringToObject(o, "k\xfe", "ok \xc3\xa9");
	char *t = print_normalized(o);
	CHECK_STREQ(t, "{\"comm\":\"a\xef\xbf\xbd" "b\xef\xbf\xbd\xef\xbf\xbd" "c"
		       "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\","
		       "\"k\xef\xbf\xbd\":\"ok \xc3\xa9\"}");
	free(t);
	CHECK(json_utf8_valid("\xf0\x9f\x98\x80", 4));
	CHECK(!json_utf8_valid("\xf4\x90\x80\x80", 4)); /* past U+10FFFF */
	CHECK(!json_utf8_valid("\xe0\x80\x80", 3));	 /* overlong */
	CHECK(!json_utf8_valid("\xc3", 1));		 /* cut short */
}

int main(void)
{
	RUN(test_integers_exact);
	RUN(test_utf8_repaired);
	return test_summary();
}
