// libedit's readline header uses FILE without including stdio.h.
#include <stdio.h>
#include <editline/readline.h>
