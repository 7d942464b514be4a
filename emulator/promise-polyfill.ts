/**
 * aws-local-stepfunctions 3 targets Node >= 22 and calls `Promise.withResolvers`; rcb runs
 * on Node 20. Importing this module before the library adds the one static it needs.
 */
const promiseStatics = Promise as unknown as { withResolvers?: () => unknown };
if (!promiseStatics.withResolvers) {
  promiseStatics.withResolvers = () => {
    let resolve!: (v: unknown) => void;
    let reject!: (e: unknown) => void;
    const promise = new Promise((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  };
}

export {};
