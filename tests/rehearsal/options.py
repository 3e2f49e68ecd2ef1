"""The deploy options the rehearsal runs on the prod stack (tests/rehearsal/rehearse.py), and
the ones it cannot run on LocalStack, each listed as a gap with the reason."""

from derive import REGION

ROLES = ("EnqueueRole", "PollerRole")
# The prod stack's provisioned capacity: odd numbers, so that no default passes for them.
READ_UNITS, WRITE_UNITS = 3, 7


class ProdOptions:
    """A customer-managed KMS key for the tables (issue 48, item 3), created in LocalStack's
    KMS, given as TableKmsKeyArn and checked on the tables and on both roles; active X-Ray
    tracing (item 4), checked on both functions; and provisioned capacity (issue 45, item 6),
    checked on the tables and their index."""

    def __init__(self, rehearsal, check, gap):
        self.r, self.check, self.gap = rehearsal, check, gap
        self.key_arn = rehearsal.kms.create_key(Description="sqs-waiter rehearsal tables")["KeyMetadata"]["Arn"]
        # Issue 45, item 6: prod is deployed PROVISIONED, its tables and index at these units.
        rehearsal.provisioned_prefixes.add("prod-")
        gap(False, "prod: autoscaling (MaxReadCapacity, MaxWriteCapacity) not rehearsed",
            "LocalStack's community edition has no Application Auto Scaling, so its ScalableTarget and "
            "ScalingPolicy resources cannot be created here; tests/template and infra/test check them")

    def parameters(self):
        return {"TableKmsKeyArn": self.key_arn, "Tracing": "Active", "BillingMode": "PROVISIONED",
                "ReadCapacity": str(READ_UNITS), "WriteCapacity": str(WRITE_UNITS)}

    def check_tables(self, stack, tables, key):
        """Each table encrypted with `key`; with None, with the AWS managed key (DynamoDB names
        that key's ARN too), so not with the prod stack's. With `key` (prod), table and index
        provisioned at the stack's units."""
        for t in tables:
            described = self.r.table(t) or {}
            if key:
                units = [described.get("ProvisionedThroughput", {})] + [
                    g.get("ProvisionedThroughput", {}) for g in described.get("GlobalSecondaryIndexes", [])]
                got = [(u.get("ReadCapacityUnits"), u.get("WriteCapacityUnits")) for u in units]
                mode = described.get("BillingModeSummary", {}).get("BillingMode", "PROVISIONED")
                self.check(mode == "PROVISIONED" and got == [(READ_UNITS, WRITE_UNITS)] * 2,
                           f"{stack}: table {t} and its index provisioned at {READ_UNITS} read and {WRITE_UNITS} "
                           f"write units (BillingMode PROVISIONED; got {mode}, {got})")
            sse = described.get("SSEDescription", {})
            if key:
                ok, want = sse.get("KMSMasterKeyArn") == key, f"with the stack's key {key}"
            else:
                ok, want = sse.get("KMSMasterKeyArn") != self.key_arn, "with the AWS managed key, not prod's"
            self.check(ok and sse.get("SSEType") == "KMS", f"{stack}: table {t} encrypted {want} (SSEDescription {sse})")

    def check_keys(self, stack, queues, prefix):
        self.check_tables(stack, [prefix + q for q in queues], self.key_arn)
        res = self.r.resources(stack)
        for logical in ("EnqueueFunction", "PollerFunction"):
            name = self.r.physical(res, logical)
            mode = self.r.lam.get_function_configuration(FunctionName=name).get("TracingConfig", {}).get("Mode")
            self.check(mode == "Active", f"{stack}: {logical} traced actively (Tracing=Active; got {mode})")
        for logical in ROLES:
            role = self.r.physical(res, logical)
            if not self.check(role is not None, f"{stack}: role {logical}"):
                continue
            policies = self.r.inline_policies(role)
            doc = policies.get("sqs-waiter-table-key", {"Statement": []})
            resources = [s.get("Resource") for s in doc["Statement"]]
            via = [s.get("Condition", {}).get("StringEquals", {}).get("kms:ViaService") for s in doc["Statement"]]
            self.check(resources == [self.key_arn] and via == [f"dynamodb.{REGION}.amazonaws.com"],
                       f"{stack}: {logical} may use the tables' key only, through DynamoDB (got {resources}, {via})")
            others = [n for n, d in policies.items() if n != "sqs-waiter-table-key" and self.key_arn in str(d)]
            self.check(others == [], f"{stack}: {logical}: no other policy names the tables' key (got {others})")
