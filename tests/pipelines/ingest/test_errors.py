"""What a failed Spark job says: its root cause, not the Java wrapping around it."""

from pipelines.ingest.errors import spark_failure_reason


class JavaThrowable:
    """Stands in for a py4j Java exception: a message and a cause."""

    def __init__(self, message: str | None, cause: "JavaThrowable | None" = None) -> None:
        self.message, self.cause = message, cause

    def getMessage(self):
        return self.message

    def getCause(self):
        return self.cause

    def toString(self):
        return f"java.lang.Exception: {self.message}"


class WrappedJavaError(Exception):
    """Stands in for py4j's Py4JJavaError: the Java exception is `java_exception`."""

    def __init__(self, java: JavaThrowable) -> None:
        super().__init__("An error occurred while calling o633.save.\n: org.apache.spark...")
        self.java_exception = java


def test_a_python_error_in_a_task_is_reported_by_its_last_traceback_line():
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/work/pipelines/ingest/reader.py", line 57, in read_slice\n'
        "    chunk = js.run(...)\n"
        "resources.jetstream.errors.RequestTimeoutError: reading stream 'FILE_EVENTS' from 5 "
        "to 10: no message for 30.0s; check the server's health\n"
    )
    error = WrappedJavaError(
        JavaThrowable("[TASK_WRITE_FAILED] Task failed", JavaThrowable(traceback))
    )

    assert spark_failure_reason(error) == (
        "resources.jetstream.errors.RequestTimeoutError: reading stream 'FILE_EVENTS' from 5 "
        "to 10: no message for 30.0s; check the server's health"
    )


def test_a_java_error_is_reported_by_its_innermost_cause():
    error = WrappedJavaError(
        JavaThrowable(
            "[TASK_WRITE_FAILED] Task failed while writing rows",
            JavaThrowable("No space left on device\n\tat java.io.FileOutputStream.write"),
        )
    )

    assert spark_failure_reason(error) == "No space left on device"


def test_an_error_without_java_parts_is_reported_by_its_first_line():
    assert spark_failure_reason(ValueError("bad value\nmore")) == "bad value"
    assert spark_failure_reason(ValueError()) == "ValueError"
