/* The C interface from C: round, and report a bad format name. */
#include <ebla/ebla.h>

#include <stdio.h>
#include <string.h>

int main(void) {
  double y = 0.0;
  if (ebla_round(0.1, "binary16", "nearest_even", 0.0, &y) != EBLA_OK || y != 0x1.998p-4) return 1;
  if (ebla_round(0.1, "binary17", "nearest_even", 0.0, &y) != EBLA_INVALID_ARGUMENT) return 2;
  if (strstr(ebla_last_error(), "binary17") == NULL) return 3;
  printf("consumer_c: ebla_round(0.1, binary16) = %a; bad name says: %s\n", y, ebla_last_error());
  return 0;
}
