/* main.c — placeholder */
#include "tide.h"
int main(void) { return 0; }
