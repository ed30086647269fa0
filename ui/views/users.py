"""Users: add users, change roles, reset passwords (admin only).

Passwords are hashed by the catalog (scrypt); this page never shows or stores them. Every change
records the signed-in admin as the actor.
"""

from __future__ import annotations

from typing import cast

import pandas as pd
import streamlit as st

from jobs.catalog.records import Role
from ui import auth, common, fmt

cat, user = common.page_setup("admin")
st.title("Users")
ROLES = ["viewer", "editor", "operator", "admin"]
st.caption("viewer: read · editor: + define/edit jobs · operator: + start/stop/restart/roll "
           "back · admin: + users")

users = cat.users()
st.dataframe(
    pd.DataFrame([{"user": u.name, "role": u.role, "created": fmt.when(u.created_at),
                   "disabled": u.disabled} for u in users]),
    hide_index=True, key="users_table",
)

st.subheader("Add a user")
with st.form("user_add", enter_to_submit=False, clear_on_submit=True):
    name = st.text_input("User name", key="ua_name")
    role = st.selectbox("Role", ROLES, key="ua_role")
    password = st.text_input("Password", type="password", key="ua_password")
    added = st.form_submit_button("Add user")
if added:
    if not name.strip() or len(password) < 8:
        st.error("A user needs a name and a password of at least 8 characters.")
    else:
        auth.perform(cat, "admin", f"Add user {name.strip()}",
                     lambda actor: cat.add_user(name.strip(), password, cast(Role, role), actor))

if users:
    st.subheader("Change a user")
    target = st.selectbox("User", [u.name for u in users], key="uc_user")
    current = next(u for u in users if u.name == target)
    c1, c2 = st.columns(2)
    with c1:
        new_role = st.selectbox("New role", ROLES, index=ROLES.index(current.role), key="uc_role")
        if st.button("Set role", key="uc_set_role", disabled=new_role == current.role):
            if target == user.name and new_role != "admin":
                st.error("You cannot take the admin role from yourself; ask another admin.")
            else:
                auth.perform(cat, "admin", f"Set role of {target} to {new_role}",
                             lambda actor: cat.set_role(target, cast(Role, new_role), actor))
    with c2:
        new_pw = st.text_input("New password", type="password", key="uc_password")
        if st.button("Set password", key="uc_set_password"):
            if len(new_pw) < 8:
                st.error("Passwords need at least 8 characters.")
            else:
                auth.perform(cat, "admin", f"Set password of {target}",
                             lambda actor: cat.set_password(target, new_pw, actor))
