/* SPDX-License-Identifier: MIT */
/* The command table and the manual text of gpuprofctl. */
#ifndef GPUPROFCTL_HELP_H
#define GPUPROFCTL_HELP_H

#include <stdio.h>

#include "cli.h"

/* The command called name, or NULL. */
const struct command *help_find(const char *name);
/* The overview (cmd NULL) or one command's manual. */
void help_print(FILE *f, const char *cmd);
/* The command table as JSON (`gpuprofctl __describe`, used by the build,
 * not listed in the help): {"footer": ..., "commands": [{"name",
 * "summary", "usage"}...]}. Returns an exit status. */
int help_describe(FILE *f);

#endif
