/* test_session.c — placeholder until its suite lands: reports "skipped". */
int main(void) { return 77; }
