"""Airlock for Python hosts: a typed client for an Airlock relay (standard library only).

```python
from airlock_sdk import AirlockClient

airlock = AirlockClient("https://airlock.example.com", admin_token=os.environ["AIRLOCK_ADMIN_TOKEN"])
session = airlock.create_session(destinations=["telegram:12345"], ttl_seconds=3600)
airlock.seed_inbox(session["sessionId"], "data.csv")
# ... the agent runs with AIRLOCK_TOKEN=session["token"] ...
for file in airlock.list_files(session_id=session["sessionId"]):
    airlock.download_to_dir(file["fileId"], "out")
```
"""
from .client import AirlockClient, AirlockSession
from .errors import EXEC_ERROR_CODES, AirlockError
from .names import clean_file_name
from .sizes import human_size, parse_size

__version__ = "0.1.0"
__all__ = [
    "AirlockClient",
    "AirlockError",
    "AirlockSession",
    "EXEC_ERROR_CODES",
    "clean_file_name",
    "human_size",
    "parse_size",
]
