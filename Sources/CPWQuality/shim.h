// libpwquality: passphrase strength (length, character classes, cracklib dictionary check).
#include <pwquality.h>
