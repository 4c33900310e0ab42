// SPDX-License-Identifier: MIT
/* comm_analyze(): params, the ranks, then each rank's extraction and metrics,
 * the straggler view; one result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm_int.h"

static void ctx_free(struct cctx *c)
{
	for (uint32_t i = 0; i < c->nranks; i++) {
		free(c->ranks[i].iters);
	}
	for (uint32_t g = 0; g < c->nsg; g++)
		free(c->sg[g].v);
	free(c->sg);
	cbuf_free(&c->buf);
	free(c->buf.gpu);
	free(c->ranks);
	free(c->sclass);
	free(c->group_of);
	free(c->coll_type);
	free(c->el_size);
	free(c->iter_mark);
	free(c->groups);
	free(c->gcount);
	comm_free_rules(c);
}

static const char *bw_source(const struct cctx *c)
{
	if (cJSON_GetObjectItemCaseSensitive(c->params, "link_bandwidth"))
		return "param";
	if (c->link_bw > 0)
		return "config";
	for (uint32_t i = 0; i < c->nranks; i++)
		if (c->ranks[i].link_bw > 0)
			return "device name";
	return "unknown: pass link_bandwidth (bytes/s) for utilisation";
}

int comm_analyze(const struct timeline *tl, const cJSON *params, const cJSON *defaults,
		 cJSON **result, char *err, size_t errlen)
{
	struct cctx c;
	cJSON *root = NULL;
	int rc;

	memset(&c, 0, sizeof(c));
	c.tl = tl;
	c.params = params;
	c.defaults = defaults;
	c.err = err;
	c.errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	*result = NULL;
	if ((rc = comm_parse_params(&c)) || (rc = comm_select(&c)))
		goto out;
	root = cJSON_CreateObject();
	if (!root) {
		rc = -ENOMEM;
		goto out;
	}
	cj_str(&c, root, "analysis", "comm");
	cj_str(&c, root, "unit", "us");
	cj_str(&c, root, "percentile",
	       "linear interpolation between closest ranks (numpy default, Hyndman-Fan 7)");
	cj_num(&c, root, "link_bandwidth_Bps",
	       c.nranks && c.ranks[0].link_bw > 0 ? c.ranks[0].link_bw : NAN);
	cj_str(&c, root, "link_bandwidth_source", bw_source(&c));
	cj_num(&c, root, "nranks", c.nranks);
	if ((rc = comm_metrics(&c, root)) || (rc = comm_straggler(&c, root)))
		goto out;
	if (c.oom)
		rc = -ENOMEM;
out:
	if (rc == -ENOMEM)
		cerr(&c, rc, "out of memory");
	if (rc) {
		cJSON_Delete(root);
		root = NULL;
	}
	*result = root;
	ctx_free(&c);
	return rc;
}

/* The analysis table's entry: no configured defaults (the RPC method adds
 * comm.params and the SVG). */
int analysis_comm(struct actx *c, cJSON **out)
{
	return comm_analyze(c->tl, c->params, NULL, out, c->err, c->errlen);
}
