/** The variable naming the folder the unit project's test files share one synthesized stack in. */
export const SHARED_STACK_DIR_ENV = 'RCB_TEST_SHARED_STACK_DIR';
