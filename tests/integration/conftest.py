"""Fixtures shared by the integration tests: ``scene`` (alice owns a database, bob is a stranger)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests import servers
from tests.integration.scenes import Scene


@pytest.fixture
def scene(pg) -> Iterator[Scene]:
    suffix = uuid.uuid4().hex[:8]
    alice, bob, name = f"alice_{suffix}", f"bob_{suffix}", f"attack_{suffix}"
    with psycopg.connect(pg.server.dsn(), autocommit=True) as root:
        for role in (alice, bob):
            root.execute(sql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE").format(
                sql.Identifier(role)))
        root.execute(sql.SQL("CREATE DATABASE {} OWNER {} TEMPLATE template0").format(
            sql.Identifier(name), sql.Identifier(alice)))
    try:
        with psycopg.connect(pg.server.dsn(name), autocommit=True) as admin:
            yield Scene(pg, name, alice, bob, admin)
    finally:
        with psycopg.connect(pg.server.dsn(), autocommit=True) as root:
            for db in (name, f"{name}_r1", f"{name}_r2"):
                root.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(db)))
            for role in (alice, bob):
                root.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(sql.Identifier(role)))


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[webdriver.Chrome, Path]]:
    """Headless chromium, network off, downloads into a folder of its own."""
    servers.ensure_chromium()
    downloads = tmp_path_factory.mktemp("downloads")
    options = webdriver.ChromeOptions()
    options.binary_location = servers.CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
                "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"):  # no network either way
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    driver = webdriver.Chrome(service=Service(servers.CHROMEDRIVER), options=options)  # no Selenium Manager
    try:
        driver.execute_cdp_cmd("Network.enable", {})
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {
            "offline": True, "latency": 0, "downloadThroughput": 0, "uploadThroughput": 0})
        yield driver, downloads
    finally:
        driver.quit()
