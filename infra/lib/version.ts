/**
 * The sqs-waiter release this construct belongs to: the workspace's version in Cargo.toml, which
 * `test/version.test.ts` checks, with package.json's. The stack outputs it as `Version`.
 */
export const VERSION = "0.2.0";
