"""Tables in object storage: an embedded S3 server (SeaweedFS) for the tests and the demo
(`server.py`), its build from the Go module proxy (`weed.py`), and the endpoint settings
Spark's S3A connector and pyarrow share (`s3.py`). Import from the modules: `resources.spark`
imports `s3.py`, which must stay free of the server's imports."""
