/* placeholder: skipped until written */
int main(void) { return 77; }
