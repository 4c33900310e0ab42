// SPDX-License-Identifier: MIT
/* The stand-in libcupti keeps CUPTI's one-subscriber rule, which the
 * release tests depend on: a second cuptiSubscribe fails with
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (naming the holder to
 * cuptiSubscribe_v2) until the holder unsubscribes, and then succeeds. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

#include "test.h"

static void CUPTIAPI cb(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
}

static void test_one_subscriber(void)
{
	CUpti_SubscriberHandle ours, kineto, again;
	char old[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";
	CUpti_SubscriberParams p = {
		.structSize = CUpti_SubscriberParams_STRUCT_SIZE,
		.subscriberName = "gpuprof",
		.oldSubscriberName = old,
		.oldSubscriberSize = sizeof(old),
	};

	unsetenv("FAKE_CUPTI_SUBSCRIBER");
	CHECK_EQ_INT(cuptiSubscribe_v2(&ours, cb, NULL, &p), CUPTI_SUCCESS);
	/* a profiler starting while we hold it (Kineto's one try) */
	CHECK_EQ_INT(cuptiSubscribe(&kineto, cb, NULL), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	p.subscriberName = "kineto";
	CHECK_EQ_INT(cuptiSubscribe_v2(&again, cb, NULL, &p),
		     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	CHECK_STREQ(old, "CUPTI for gpuprof");
	/* the release: once we let go, the next subscriber gets CUPTI */
	CHECK_EQ_INT(cuptiUnsubscribe(ours), CUPTI_SUCCESS);
	CHECK_EQ_INT(cuptiUnsubscribe(ours), CUPTI_ERROR_INVALID_PARAMETER);
	CHECK_EQ_INT(cuptiSubscribe(&kineto, cb, NULL), CUPTI_SUCCESS);
	CHECK_EQ_INT(cuptiSubscribe_v2(&again, cb, NULL, &p),
		     CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	CHECK_EQ_INT(cuptiUnsubscribe(kineto), CUPTI_SUCCESS);
}

int main(void)
{
	RUN(test_one_subscriber);
	return test_summary();
}
