import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { VERSION } from "./version.ts";

/**
 * A release package's zip of `binary` for `architecture` (`make dist` packs them into the CDK
 * package's `assets/`), or undefined when the package has none: the construct then builds from
 * source.
 */
export function releaseCode(binary: string, architecture: lambda.Architecture, assets = releaseAssets()): lambda.Code | undefined {
  const arch = architecture.name === lambda.Architecture.X86_64.name ? "x86_64" : "arm64";
  const zip = path.join(assets, `sqs-waiter-${VERSION}-${binary}-${arch}.zip`);
  return fs.existsSync(zip) ? lambda.Code.fromAsset(zip) : undefined;
}

/** Where a release package keeps its zips: `assets/` beside the compiled `lib/`. */
export function releaseAssets(): string {
  return path.join(import.meta.dirname, "..", "assets");
}

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

/**
 * cargo-lambda-cdk, loaded only when the construct builds from source (no code given, no
 * release zips). It is an optional peer dependency of the package: an app that deploys a
 * release's zips never installs it (issue 81).
 */
export function cargoLambdaCdk(): typeof import("cargo-lambda-cdk") {
  try {
    return createRequire(import.meta.url)("cargo-lambda-cdk") as typeof import("cargo-lambda-cdk");
  } catch (e) {
    throw new Error(
      "SqsWaiter: no code was given and this package has no release zips, so it builds from source with " +
        `cargo-lambda-cdk, which is not installed (npm install cargo-lambda-cdk): ${(e as Error).message}`,
    );
  }
}
