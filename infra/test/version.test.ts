import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";
import { Template } from "aws-cdk-lib/assertions";
import * as lambda from "aws-cdk-lib/aws-lambda";
import { releaseCode } from "../lib/code.ts";
import { ExampleStack } from "../lib/example-stack.ts";
import { VERSION } from "../lib/version.ts";
import { fakeCode, newApp } from "./helpers.ts";

const root = path.join(import.meta.dirname, "..", "..");

test("the construct's version is the workspace's and package.json's, and the stack outputs it", () => {
  const cargo = fs.readFileSync(path.join(root, "Cargo.toml"), "utf8");
  const workspace = /\[workspace\.package\]\s*\nversion = "([^"]+)"/.exec(cargo);
  assert.equal(VERSION, workspace?.[1]);
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "infra", "package.json"), "utf8"));
  assert.equal(pkg.version, VERSION);
  const stack = new ExampleStack(newApp(), "Example", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const outputs = Object.values(Template.fromStack(stack).findOutputs("*"));
  assert.ok(outputs.some((o: any) => o.Value === VERSION), JSON.stringify(outputs));
});

test("enqueue waits for the poller, so an update reaches the poller first", () => {
  const stack = new ExampleStack(newApp(), "Example", { enqueueCode: fakeCode(), pollerCode: fakeCode() });
  const template = Template.fromStack(stack);
  const functions = template.findResources("AWS::Lambda::Function");
  const id = (name: string) =>
    Object.keys(functions).find((k) => k.startsWith("Waiter") && k.includes(name) && !k.includes("LogRetention"));
  const enqueue = id("Enqueue");
  const poller = id("Poller");
  assert.ok(enqueue && poller, Object.keys(functions).join(", "));
  assert.ok(functions[enqueue].DependsOn?.includes(poller), JSON.stringify(functions[enqueue].DependsOn));
  assert.ok(!functions[poller].DependsOn?.includes(enqueue));
});

test("a release package's zips are the code, found by version and architecture; without them, none", () => {
  const assets = fs.mkdtempSync(path.join(os.tmpdir(), "sqs-waiter-assets-"));
  assert.equal(releaseCode("enqueue", lambda.Architecture.ARM_64, assets), undefined);
  const zip = path.join(assets, `sqs-waiter-${VERSION}-enqueue-arm64.zip`);
  fs.writeFileSync(zip, "zip");
  const code = releaseCode("enqueue", lambda.Architecture.ARM_64, assets);
  assert.ok(code instanceof lambda.AssetCode && code.path === zip, String(code));
  assert.equal(releaseCode("enqueue", lambda.Architecture.X86_64, assets), undefined, "another architecture's");
  assert.equal(releaseCode("poller", lambda.Architecture.ARM_64, assets), undefined);
});
