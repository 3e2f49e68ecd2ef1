"""A LocalStack Lambda runtime executor for the deploy rehearsal (tests/rehearsal).

LocalStack's default executor downloads its Lambda runtime and starts Docker containers, both
unreachable on these machines, so every AWS::Lambda::Function of a stack would end `Failed`.
This executor prepares nothing: functions are created and become Active with their whole
configuration (role, environment, architecture, logging, concurrency), which is what the
rehearsal checks; invoking one fails with a clear error instead of pretending to run it.
Selected with LAMBDA_RUNTIME_EXECUTOR=sqs-waiter-noop.
"""

from plux import Plugin


class NotRunnable(Exception):
    pass


def _executor_class():
    from localstack.services.lambda_.invocation.runtime_executor import RuntimeExecutor

    class NoopExecutor(RuntimeExecutor):
        def start(self, env_vars):
            raise NotRunnable("the deploy rehearsal registers functions but never runs them")

        def stop(self):
            pass

        def get_address(self):
            raise NotRunnable("not running")

        def get_endpoint_from_executor(self):
            raise NotRunnable("not running")

        def get_runtime_endpoint(self):
            raise NotRunnable("not running")

        def invoke(self, payload):
            raise NotRunnable("the deploy rehearsal registers functions but never runs them")

        def get_logs(self):
            return ""

        @classmethod
        def prepare_version(cls, function_version):
            pass

        @classmethod
        def cleanup_version(cls, function_version):
            pass

        @classmethod
        def validate_environment(cls):
            return True

    return NoopExecutor


class NoopExecutorPlugin(Plugin):
    namespace = "localstack.lambda.runtime_executor"
    name = "sqs-waiter-noop"

    def load(self, *args, **kwargs):
        return _executor_class()
