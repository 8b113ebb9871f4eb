"""Sensors on stream sequence advances and replay requests (see docs/automation.md)."""

from sensors.cursor import StreamSensorCursor
from sensors.replays import build_replay_request_sensor
from sensors.stream import SensorTickError, build_stream_sensor
from sensors.stream_options import StreamSensorOptions

__all__ = [
    "SensorTickError",
    "StreamSensorCursor",
    "StreamSensorOptions",
    "build_replay_request_sensor",
    "build_stream_sensor",
]
