"""The deploy options the rehearsal runs on the prod stack (tests/rehearsal/rehearse.py), and
the ones it cannot run on LocalStack, each listed as a gap with the reason."""

from derive import REGION

ROLES = ("EnqueueRole", "PollerRole")


class ProdOptions:
    """A customer-managed KMS key for the tables (issue 48, item 3), created in LocalStack's
    KMS, given as TableKmsKeyArn and checked on the tables and on both roles; and active X-Ray
    tracing (item 4), checked on both functions."""

    def __init__(self, rehearsal, check, gap):
        self.r, self.check, self.gap = rehearsal, check, gap
        self.key_arn = rehearsal.kms.create_key(Description="sqs-waiter rehearsal tables")["KeyMetadata"]["Arn"]
        gap(False, "prod: BillingMode PROVISIONED not rehearsed",
            "DynamoDB Local, behind LocalStack's DynamoDB, does not enforce capacity, so a deploy would show only "
            "that CloudFormation passes ReadCapacity and WriteCapacity on, which tests/template checks; the "
            "rehearsal's time goes to the KMS option")

    def parameters(self):
        return {"TableKmsKeyArn": self.key_arn, "Tracing": "Active"}

    def check_tables(self, stack, tables, key):
        """Each table encrypted with `key`; with None, with the AWS managed key (DynamoDB names
        that key's ARN too), so not with the prod stack's."""
        for t in tables:
            sse = (self.r.table(t) or {}).get("SSEDescription", {})
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
