"""Who is calling and what they may do (docs/design.md §4): the principal an API key stands for, and the
permissions of each role. Everything that checks a permission imports this module and nothing above it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from enum import StrEnum

from service.errors import Forbidden


class Permission(StrEnum):
    ITEMS_WRITE = "items:write"
    ITEMS_READ = "items:read"
    WRITE_SYSTEM_AUTHORITY = "items:write-system"
    USERS_EXPORT = "users:export"
    USERS_ERASE = "users:erase"
    KEYS_MANAGE = "keys:manage"
    PROFILE_WRITE = "profile:write"
    PROFILE_CONFIRM = "profile:confirm"
    EVIDENCE_READ = "evidence:read"
    JOBS_RUN = "jobs:run"


# agent: items, observations, windows. operator: reads everything in its tenant. admin: everything,
# including keys, erasure, jobs and writing system-authority rules.
ROLE_PERMISSIONS: dict[str, frozenset[Permission]] = {
    "agent": frozenset(
        {Permission.ITEMS_WRITE, Permission.ITEMS_READ, Permission.PROFILE_WRITE, Permission.PROFILE_CONFIRM}
    ),
    "operator": frozenset(
        {Permission.ITEMS_READ, Permission.USERS_EXPORT, Permission.PROFILE_CONFIRM, Permission.EVIDENCE_READ}
    ),
    "admin": frozenset(Permission),
}


@dataclass(frozen=True)
class Principal:
    tenant_id: str
    key_id: uuid.UUID
    role: str

    @property
    def actor(self) -> str:
        return f"key:{self.key_id}"

    def can(self, permission: Permission) -> bool:
        return permission in ROLE_PERMISSIONS[self.role]

    def require(self, permission: Permission) -> None:
        if not self.can(permission):
            allowed = [role for role, granted in ROLE_PERMISSIONS.items() if permission in granted]
            raise Forbidden(
                f"a key with role {self.role!r} may not {permission.value}; that needs a key with role "
                f"{' or '.join(repr(r) for r in allowed)} (ctxmem keys create --role {allowed[0]})"
            )
