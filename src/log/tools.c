/* tools.c - `kcoord dump-log PATH...` and `kcoord verify-log DIR`: argument handling only.
 *
 * main.c hands over argv starting at the subcommand's name; the work is kc_log_dump and
 * kc_log_verify (dump.c). Exit status: 0 clean, 1 problems found, 2 usage or I/O error.
 */
#include <stdio.h>
#include <string.h>

#include "log/log.h"

static int usage(void)
{
    fputs("usage: kcoord dump-log PATH...    print segments (.log), indexes (.index) or whole\n"
          "                                  partition directories as JSON lines\n"
          "       kcoord verify-log DIR      check every batch, record and index of a data\n"
          "                                  directory (or of one partition directory)\n",
          stderr);
    return 2;
}

int kc_log_tool_main(int argc, char **argv)
{
    if (argc < 1)
        return usage();
    if (strcmp(argv[0], "dump-log") == 0) {
        if (argc < 2)
            return usage();
        int status = 0;
        for (int i = 1; i < argc; i++) {
            int rc = kc_log_dump(stdout, argv[i]);
            if (rc < 0)
                status = 2;
            else if (rc > 0 && status == 0)
                status = 1;
        }
        return fflush(stdout) == 0 ? status : 2;
    }
    if (strcmp(argv[0], "verify-log") == 0) {
        if (argc != 2)
            return usage();
        int rc = kc_log_verify(argv[1], stdout);
        if (fflush(stdout) != 0)
            return 2;
        return rc < 0 ? 2 : rc > 0 ? 1 : 0;
    }
    return usage();
}
