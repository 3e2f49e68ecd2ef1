import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as lambda from "aws-cdk-lib/aws-lambda";

/**
 * The functions' code from `cargo lambda build --release --lambda-dir DIR`, which writes
 * DIR/enqueue/bootstrap and DIR/poller/bootstrap. With `allowMissing`, a placeholder stands in so
 * that the stack can be synthesised and checked without building Rust first; it must never be
 * deployed, and says so if run.
 */
export function functionCode(lambdaDir: string, allowMissing: boolean): { enqueue: lambda.Code; poller: lambda.Code } {
  const code = (name: string) => {
    const dir = path.join(lambdaDir, name);
    if (fs.existsSync(path.join(dir, "bootstrap"))) {
      return lambda.Code.fromAsset(dir);
    }
    if (!allowMissing) {
      throw new Error(`${dir}/bootstrap is missing: run \`make build\` first (or pass -c allowMissingCode=true to synth without code)`);
    }
    const placeholder = fs.mkdtempSync(path.join(os.tmpdir(), `sqs-waiter-${name}-`));
    fs.writeFileSync(path.join(placeholder, "bootstrap"), "#!/bin/sh\necho 'placeholder: build sqs-waiter before deploying' >&2\nexit 1\n", { mode: 0o755 });
    return lambda.Code.fromAsset(placeholder);
  };
  return { enqueue: code("enqueue"), poller: code("poller") };
}
