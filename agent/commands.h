/* The subcommands. Each lives in cmd_<name>.c: the front-end layer that
 * parses options, calls the silent modules, logs once and returns an exit
 * code from exitcode.h. */
#pragma once

int cmd_validate(int argc, char **argv);
int cmd_inventory(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_apply(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_register(int argc, char **argv);
int cmd_boot(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_image(int argc, char **argv);
