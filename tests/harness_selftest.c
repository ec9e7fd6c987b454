/* harness_selftest.c — the test harness itself (tests/harness.c), driven by e2e/harness_skip.sh: a
 * suite whose tests pass, skip or fail as $TIDE_TEST_ONLY selects them, to check that a skip is
 * reported as a skip (exit 77 when every test skipped, listed when some did), never as a pass. */
#include "harness.h"

static void test_passes(void) { CU_ASSERT_EQUAL(1 + 1, 2); }

static void test_skips(void)
{
    th_skip("the selftest's pretend data set is absent");
}

static void test_fails(void) { CU_FAIL("the selftest's deliberate failure"); }

int main(void)
{
    static const th_test tests[] = {TH_TEST(test_passes), TH_TEST(test_skips), TH_TEST(test_fails), TH_END};
    return th_main("harness selftest", tests);
}
