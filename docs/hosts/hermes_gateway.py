"""A Hermes-style gateway that owns its bots, with Airlock moving the files.

The gateway keeps its bot: it polls or takes the platform's webhook, talks to people, runs the
agent in a remote sandbox (Docker, SSH, Modal...). Airlock is given the same bot token
(``TELEGRAM_BOT_TOKEN`` on the relay) and only ever *posts* with it (``sendDocument``,
``sendPhoto``, ``sendMessage``), so it never competes with the gateway's ``getUpdates`` or
webhook.

- Outbound: the agent runs ``airlock send report.pdf --to telegram:<chat>`` in the sandbox; the
  relay delivers it natively (or as a link over the platform's limit). A ``MEDIA:<path>`` line
  in the agent's reply is delivered the same way by :meth:`AirlockGateway.deliver_media`,
  through the exec channel, with no base64 and no size cap.
- Inbound: the gateway got a person's attachment in an update; :meth:`AirlockGateway.on_update`
  streams it from the platform into the conversation's session and returns the line to tell
  the agent, whose ``airlock pull`` then writes it into the remote sandbox.
"""
from __future__ import annotations

import json
import urllib.request
from typing import Any, Dict, Optional

from airlock_sdk import AirlockClient
from airlock_sdk.exec import ExecAdapter


class AirlockGateway:
    def __init__(self, airlock: AirlockClient, bot_token: str, api_root: str = "https://api.telegram.org") -> None:
        self.airlock, self.bot, self.api = airlock, bot_token, api_root.rstrip("/")
        self.sessions: Dict[str, Dict[str, Any]] = {}  # one Airlock session per conversation

    def session_for(self, chat_id: str) -> Dict[str, Any]:
        """The conversation's session; its sandbox gets ``AIRLOCK_URL`` and ``AIRLOCK_TOKEN``."""
        if chat_id not in self.sessions:
            self.sessions[chat_id] = self.airlock.create_session(destinations=[f"telegram:{chat_id}"], ttl_seconds=86400)
        return self.sessions[chat_id]

    # --- the ~20 lines: a person's attachment to the conversation's sandbox ---------------
    def on_update(self, update: Dict[str, Any]) -> Optional[str]:
        """Call from the gateway's own update handler. Returns the line to tell the agent."""
        message = update.get("message") or {}
        attachment = message.get("document") or (message.get("photo") or [None])[-1]
        if not attachment:
            return None
        chat_id = str(message["chat"]["id"])
        name = attachment.get("file_name") or f"photo-{attachment['file_unique_id']}.jpg"
        got = self._bot("getFile", file_id=attachment["file_id"])
        with urllib.request.urlopen(f"{self.api}/file/bot{self.bot}/{got['file_path']}") as body:
            size = int(body.headers["content-length"])
            item = self.airlock.seed_inbox(self.session_for(chat_id)["sessionId"], body, name=name, size=size)
        return f"[User sent {item['file']['name']} ({item['file']['size']} bytes): run `airlock pull` to get it]"

    def deliver_media(self, exec: ExecAdapter, chat_id: str, path: str, caption: Optional[str] = None) -> Dict[str, Any]:
        """A ``MEDIA:<path>`` line of the agent's reply: the file goes from the sandbox to the
        chat through the exec channel and the relay (checked by SHA-256, any size)."""
        session = self.session_for(chat_id)
        record = self.airlock.collect_file(exec, session["sessionId"], path)
        return self.airlock.as_session(session["token"]).deliver(record["fileId"], to=f"telegram:{chat_id}", caption=caption)
    # ---------------------------------------------------------------------------------------

    def _bot(self, method: str, **params: str) -> Dict[str, Any]:
        request = urllib.request.Request(
            f"{self.api}/bot{self.bot}/{method}",
            data=json.dumps(params).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request) as answer:
            return json.load(answer)["result"]
