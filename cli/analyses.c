// SPDX-License-Identifier: MIT
/*
 * The analyses' parameters as options of `gpuprofctl analyze`. The table is
 * gpuprofd's own (analyze.list's answer), taken at build time
 * (analyses_table.h, scripts/gendoc.py), so a parameter a new analysis
 * declares is an option here with no code: --NAME-WITH-DASHES VALUE,
 * converted by the parameter's type.
 */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyses_table.h"

/* Option names compared with '-' and '_' alike ("critical-path"). */
static bool same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (*a != *b && !((*a == '-' || *a == '_') && (*b == '-' || *b == '_')))
			return false;
	return *a == *b;
}

static const char *pstr(const cJSON *p, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(p, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* The option a parameter is offered as: its "option", else its name. */
static const char *option_of(const cJSON *p)
{
	const char *o = pstr(p, "option");

	return o ? o : pstr(p, "name");
}

/* Parameters the command line fills otherwise: rank (--rank of every
 * analysis) and the descriptors of --overlay / --trace. */
static bool offered(const cJSON *p, const struct option *own)
{
	const char *type = pstr(p, "type"), *opt = option_of(p);

	if (!type || !opt || !pstr(p, "name") || !strcmp(type, "fds"))
		return false;
	for (; own->name; own++)
		if (same_name(own->name, opt))
			return false;
	return true;
}

static bool known(const struct an_table *t, const char *opt)
{
	for (size_t i = 0; i < t->n; i++)
		if (same_name(t->opts[i].name, opt))
			return true;
	return false;
}

/* One long option for p: "--num-kernels", a value unless a flag. */
static int add_option(struct an_table *t, const cJSON *p)
{
	char *name = strdup(option_of(p));

	if (!name)
		return -1;
	for (char *c = name; *c; c++)
		if (*c == '_')
			*c = '-';
	t->opts[t->n] = (struct option){
		.name = name,
		.has_arg = strcmp(pstr(p, "type"), "bool") ? required_argument : optional_argument,
		.val = AN_OPT_BASE + (int)t->n,
	};
	t->param[t->n++] = p;
	return 0;
}

int an_table_load(struct an_table *t, const struct option *own)
{
	const cJSON *a, *p;

	memset(t, 0, sizeof(*t));
	t->root = cJSON_Parse(analyses_json);
	t->list = cJSON_GetObjectItemCaseSensitive(t->root, "analyses");
	if (!cJSON_IsArray(t->list))
		return cli_fail(EXIT_USAGE, "internal: the built-in analysis table is damaged");
	cJSON_ArrayForEach(a, t->list)
	{
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(a, "parameters"))
		{
			if (!offered(p, own) || known(t, option_of(p)))
				continue;
			if (t->n == AN_MAX_OPTS || add_option(t, p) < 0)
				return cli_fail(EXIT_USAGE, "internal: too many analysis options");
		}
	}
	return CLI_CONTINUE;
}

void an_table_free(struct an_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free((char *)t->opts[i].name);
	cJSON_Delete(t->root);
	memset(t, 0, sizeof(*t));
}

const cJSON *an_table_find(const struct an_table *t, const char *name)
{
	const cJSON *a;

	cJSON_ArrayForEach(a, t->list)
	{
		const char *n = pstr(a, "name");

		if (n && same_name(n, name))
			return a;
	}
	return NULL;
}

bool an_takes(const cJSON *analysis, const char *name, const char *type)
{
	const cJSON *p;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(analysis, "parameters"))
	{
		const char *n = pstr(p, "name"), *ty = pstr(p, "type");

		if ((!name || (n && !strcmp(n, name))) && (!type || (ty && !strcmp(ty, type))))
			return true;
	}
	return false;
}

/* I or I:J into params[key] (the daemon takes I, [I, J] or "I:J": this
 * checks it first, so a typo is a usage error). */
static bool add_range(cJSON *p, const char *key, const char *s)
{
	uint64_t a, b;
	const char *colon = strchr(s, ':');
	char first[32];

	if (!colon)
		return cli_parse_u64(s, &a) && a < 1000000000 &&
		       cJSON_AddNumberToObject(p, key, (double)a);
	if ((size_t)(colon - s) >= sizeof(first))
		return false;
	memcpy(first, s, (size_t)(colon - s));
	first[colon - s] = 0;
	if (!cli_parse_u64(first, &a) || !cli_parse_u64(colon + 1, &b) || b < a || b >= 1000000000)
		return false;
	cJSON *arr = cJSON_AddArrayToObject(p, key);
	cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)a));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)b));
	return true;
}

/*
 * An edit SPEC: [kind:KIND | match:REGEX | REGEX] then *FACTOR or
 * =MICROSECONDS at the end, e.g. "kind:comm*0.5", "kind:launch_delay=5",
 * "^aten::mm$*0.8". The last '*' or '=' followed by a number splits it, so
 * regexes may hold both.
 */
static cJSON *parse_edit(const char *spec)
{
	const char *op = NULL;
	char *end, *sel;
	double v = 0;
	cJSON *e;

	for (const char *q = spec; *q; q++) {
		if (*q != '*' && *q != '=')
			continue;
		v = strtod(q + 1, &end);
		if (end != q + 1 && !*end)
			op = q;
	}
	if (!op || op == spec)
		return NULL;
	sel = strndup(spec, (size_t)(op - spec));
	e = cJSON_CreateObject();
	if (!sel || !e) {
		free(sel);
		cJSON_Delete(e);
		return NULL;
	}
	if (!strncmp(sel, "kind:", 5))
		cJSON_AddStringToObject(e, "kind", sel + 5);
	else
		cJSON_AddStringToObject(e, "match", strncmp(sel, "match:", 6) ? sel : sel + 6);
	cJSON_AddNumberToObject(e, *op == '*' ? "scale" : "set_us", v);
	free(sel);
	return e;
}

/* arg as the JSON value type wants, or NULL. */
static cJSON *typed_value(const char *type, const char *arg)
{
	cJSON *v;

	if (!strcmp(type, "bool") && !arg)
		return cJSON_CreateTrue();
	if (!strcmp(type, "string"))
		return cJSON_CreateString(arg);
	v = cJSON_ParseWithOpts(arg, NULL, 1);
	if (v && ((!strcmp(type, "bool") && cJSON_IsBool(v)) ||
		  ((!strcmp(type, "int") || !strcmp(type, "number")) && cJSON_IsNumber(v)) ||
		  (!strcmp(type, "json") && (cJSON_IsObject(v) || cJSON_IsArray(v)))))
		return v;
	cJSON_Delete(v);
	return NULL;
}

static const char *const type_words[][2] = {
	{"bool", "true or false"}, {"int", "a number"},
	{"number", "a number"},	   {"json", "a JSON object or list"},
	{"range", "I or I:J"},	   {"edits", "SELECTOR*FACTOR or SELECTOR=MICROSECONDS"},
};

static int bad_value(struct cli *cli, const char *opt, const char *type, const char *arg)
{
	const char *want = type;

	for (size_t i = 0; i < sizeof(type_words) / sizeof(type_words[0]); i++)
		if (!strcmp(type_words[i][0], type))
			want = type_words[i][1];
	return cli_usage_error(cli, "invalid --%s '%s' (%s)", opt, arg ? arg : "", want);
}

int an_table_set(struct cli *cli, const struct an_table *t, int val, const char *arg, cJSON *params,
		 const char **fd_path, const char **fd_param)
{
	const cJSON *p = t->param[val - AN_OPT_BASE];
	const char *name = pstr(p, "name"), *type = pstr(p, "type");
	const char *opt = t->opts[val - AN_OPT_BASE].name;
	cJSON *v;

	if (!strcmp(type, "fd")) { /* opened once the analysis is known */
		*fd_path = arg;
		*fd_param = name;
		return CLI_CONTINUE;
	}
	if (!strcmp(type, "edits")) {
		cJSON *list = cJSON_GetObjectItemCaseSensitive(params, name);

		if (!(v = parse_edit(arg)))
			return bad_value(cli, opt, type, arg);
		if (!list)
			list = cJSON_AddArrayToObject(params, name);
		cJSON_AddItemToArray(list, v);
		return CLI_CONTINUE;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(params, name);
	if (!strcmp(type, "range"))
		return add_range(params, name, arg) ? CLI_CONTINUE : bad_value(cli, opt, type, arg);
	if (!(v = typed_value(type, arg)))
		return bad_value(cli, opt, type, arg);
	cJSON_AddItemToObject(params, name, v);
	return CLI_CONTINUE;
}

/* "  --num-kernels N   kernels listed per kernel type (10)" */
static void print_param(const cJSON *p)
{
	static const char *const metavar[][2] = {
		{"int", "N"},	    {"number", "X"},	       {"string", "TEXT"}, {"json", "JSON"},
		{"range", "I[:J]"}, {"edits", "SEL*X|SEL=US"}, {"fd", "FILE"},
	};
	const char *type = pstr(p, "type"), *def = pstr(p, "default"), *mv = "";
	char opt[96];

	if (!type || !strcmp(type, "fds"))
		return;
	for (size_t i = 0; i < sizeof(metavar) / sizeof(metavar[0]); i++)
		if (!strcmp(metavar[i][0], type))
			mv = metavar[i][1];
	snprintf(opt, sizeof(opt), "--%s%s%s", option_of(p), *mv ? " " : "", mv);
	for (char *c = opt + 2; *c && *c != ' '; c++)
		if (*c == '_')
			*c = '-';
	printf("  %-32s %s", opt, pstr(p, "help") ? pstr(p, "help") : "");
	if (def && *def)
		printf(" (%s)", def);
	putchar('\n');
}

void an_print_list(const cJSON *result)
{
	const cJSON *a, *p;
	bool first = true;

	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(result, "analyses"))
	{
		const char *name = pstr(a, "name");

		printf("%s%s: %s\n", first ? "" : "\n", name ? name : "?",
		       pstr(a, "summary") ? pstr(a, "summary") : "");
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(a, "parameters"))
			print_param(p);
		if (an_takes(a, NULL, "fds")) /* filled by analyze's own options */
			printf("  %-32s %s\n  %-32s %s\n", "--overlay FILE",
			       "write the trace with the critical path marked; needs --trace",
			       "--trace ORIGINAL",
			       "the trace file that was imported, byte for byte");
		first = false;
	}
}
