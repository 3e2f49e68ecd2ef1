"""AWS's side of the two transforms, in front of LocalStack's CloudFormation (docs/deploy.md,
"What stands in for what").

`sam deploy` (through `make deploy`, or as README's plain line) runs as a user types it, with
`AWS_ENDPOINT_URL` at LocalStack and `AWS_ENDPOINT_URL_CLOUDFORMATION` at this proxy. Every call
goes to LocalStack unchanged, but one: a `CreateChangeSet` whose template carries
`AWS::LanguageExtensions`. AWS's CloudFormation expands such a template on its own side when it
creates the change set; LocalStack's cannot (its `Fn::ForEach` refuses `&{}` in logical ids, and
its engine recurses when it updates a stack that carries the SAM transform). So the proxy does
what AWS does there, with the rehearsal's own expansion (derive.py: the loops per AWS's
documented semantics, then aws-sam-translator) for the parameters the change set was given, and
forwards the change set with the expanded template. Everything else (the managed S3 stack, the
uploads, the change set's description, its execution, the waits, the outputs, `sam delete`) is
SAM CLI and LocalStack.

Each such change set is recorded (`changesets`): the stack, its type, the capabilities and
parameters SAM sent, and the template SAM uploaded, so a test checks what the user's command
produced.
"""

import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from derive import REGION, load_template, transformed

# Parameters whose values shape the expansion; each defaults as template.yaml says.
LOOP_PARAMETERS = ("QueueNames", "AdoptedQueueNames", "CrossAccountGrants", "PollerGroups")
# Headers that the proxy sets itself on the request it forwards.
HOP = {"host", "content-length", "connection", "accept-encoding", "transfer-encoding"}


def members(form, name):
    """`Name.member.N.Field` entries of a query-protocol form, as a list of dicts by N."""
    out = {}
    prefix = f"{name}.member."
    for key, value in form.items():
        if key.startswith(prefix):
            n, _, field = key[len(prefix):].partition(".")
            out.setdefault(int(n), {})[field] = value
    return [out[n] for n in sorted(out)]


class CfnProxy:
    def __init__(self, endpoint, s3, cfn):
        self.endpoint = endpoint.rstrip("/")
        os.environ.setdefault("AWS_DEFAULT_REGION", REGION)  # the SAM translator's pseudo parameters
        self.s3 = s3
        self.cfn = cfn
        self.changesets = []
        self.errors = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = proxy.rewrite(body)
                except Exception as e:  # noqa: BLE001 (any failure answers as CloudFormation would)
                    proxy.errors.append(repr(e))
                    self.answer(400, {"Content-Type": "text/xml"}, error_xml(str(e)))
                    return
                # SAM CLI's signature (Authorization, X-Amz-Content-Sha256) covers the body as
                # sent, not as rewritten; LocalStack does not verify signatures.
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
                request = urllib.request.Request(proxy.endpoint + self.path, data=body, headers=headers, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=120) as r:
                        self.answer(r.status, dict(r.headers), r.read())
                except urllib.error.HTTPError as e:
                    self.answer(e.code, dict(e.headers), e.read())

            def answer(self, status, headers, data):
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() not in HOP:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def rewrite(self, body):
        form = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        if form.get("Action") != "CreateChangeSet":
            return body
        if "TemplateURL" in form:
            bucket, key = self.s3_location(form["TemplateURL"])
            text = self.s3.get_object(Bucket=bucket, Key=key)["Body"].read().decode()
        else:
            bucket, text = None, form.get("TemplateBody", "")
        template = load_template(text)
        transforms = template.get("Transform") or []
        if "AWS::LanguageExtensions" not in (transforms if isinstance(transforms, list) else [transforms]):
            return body  # SAM CLI's managed stack, a CDK template: nothing to expand
        if bucket is None:
            # sqs-waiter's template is past CreateChangeSet's 51,200 inline bytes: SAM CLI
            # always sends it through S3 (resolve_s3), and the expansion goes back there.
            raise ValueError("a template with AWS::LanguageExtensions came inline; the rehearsal expects it in S3")
        values = self.parameter_values(form, template)
        self.changesets.append({
            "stack": form.get("StackName"), "type": form.get("ChangeSetType"),
            "capabilities": [m[""] for m in members(form, "Capabilities")],
            "parameters": {p["ParameterKey"]: p.get("ParameterValue") for p in members(form, "Parameters")
                           if p.get("UsePreviousValue") != "true"},
            "previous": sorted(p["ParameterKey"] for p in members(form, "Parameters") if p.get("UsePreviousValue") == "true"),
            "template": template, "template_url": form.get("TemplateURL"),
        })
        split = lambda name: [q for q in values[name].split(",") if q]  # noqa: E731
        expanded = transformed(template, split("QueueNames"), split("AdoptedQueueNames"),
                               int(values["PollerGroups"]), split("CrossAccountGrants"))
        key = f"sqs-waiter-expanded/{uuid.uuid4().hex}.json"
        self.s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(expanded, separators=(",", ":")).encode())
        form.pop("TemplateBody", None)
        form["TemplateURL"] = f"{self.endpoint}/{bucket}/{key}"
        return urllib.parse.urlencode(form).encode()

    def parameter_values(self, form, template):
        """The loop parameters' values for this change set: as given, the stack's previous value
        for UsePreviousValue (what SAM CLI sends for a parameter left out), else the default."""
        given = {p["ParameterKey"]: p for p in members(form, "Parameters")}
        previous = {}
        if any(given.get(n, {}).get("UsePreviousValue") == "true" for n in LOOP_PARAMETERS):
            stack = self.cfn.describe_stacks(StackName=form["StackName"])["Stacks"][0]
            previous = {p["ParameterKey"]: p["ParameterValue"] for p in stack.get("Parameters", [])}
        out = {}
        for name in LOOP_PARAMETERS:
            p = given.get(name)
            if p and p.get("UsePreviousValue") == "true":
                if name not in previous:
                    # What AWS answers for a previous value the stack does not have.
                    raise ValueError(f"Parameter {name} has UsePreviousValue set, but the stack has no such parameter")
                out[name] = previous[name]
            elif p:
                out[name] = p.get("ParameterValue", "")
            else:
                out[name] = str(template["Parameters"][name].get("Default", ""))
        return out

    def s3_location(self, url):
        """(bucket, key) of a TemplateURL: path-style at the endpoint, or AWS's virtual-hosted
        and path-style forms."""
        parsed = urllib.parse.urlparse(url)
        host, path = parsed.netloc, parsed.path.lstrip("/")
        if ".s3." in host or host.endswith(".s3.amazonaws.com"):
            return host.split(".s3", 1)[0], path
        bucket, _, key = path.partition("/")
        return bucket, key


def error_xml(message):
    from xml.sax.saxutils import escape
    return (f'<ErrorResponse xmlns="http://cloudformation.amazonaws.com/doc/2010-05-15/"><Error><Type>Sender</Type>'
            f"<Code>ValidationError</Code><Message>{escape(message)}</Message></Error>"
            f"<RequestId>{uuid.uuid4()}</RequestId></ErrorResponse>").encode()
