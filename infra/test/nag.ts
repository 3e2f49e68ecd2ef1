import * as fs from "node:fs";
import * as path from "node:path";
import { type App, type Stack, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";

/**
 * Runs cdk-nag's AwsSolutions pack over an app the way `cdk synth` does (a CDK policy-validation
 * plugin) and returns the unacknowledged findings, one line each.
 */
export function nagFindings(app: App, _stack: Stack): string[] {
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  let failure: unknown;
  try {
    app.synth();
  } catch (e) {
    failure = e;
  }
  const reportPath = ["validation-report.json", "policy-validation-report.json"]
    .map((f) => path.join(app.outdir, f))
    .find((p) => fs.existsSync(p));
  if (!reportPath) {
    return failure ? [String(failure)] : [];
  }
  const report = JSON.parse(fs.readFileSync(reportPath, "utf8"));
  const findings: string[] = [];
  for (const plugin of report.pluginReports ?? []) {
    for (const v of plugin.violations ?? []) {
      for (const c of v.violatingConstructs ?? [{ constructPath: "?" }]) {
        findings.push(`${v.ruleName} (${v.severity}) on ${c.constructPath}: ${v.description}`);
      }
    }
  }
  // A failed synth with no parsed violation is still a failure.
  if (failure && findings.length === 0) {
    findings.push(String(failure));
  }
  return findings;
}
