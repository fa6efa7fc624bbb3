"""A generated MCP server with 125 tools, for the many-tools eval set (eval/many-tools/).

An `mcp` SDK server over stdio whose tools are data, not functions. Twenty services × six
verbs make 120 tools whose names and descriptions overlap the way real servers' do
(`tickets_update`, `crm_update`, …), and five more have the parameter types the tasks
convert to (enums, ISO dates, integers, currency codes). A call answers with what it was
given, so a task's checks see the arguments that arrived.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, Tool

SERVICES = {
    "crm": "customer records (contacts, companies, deals)",
    "billing": "invoices and payments of customers",
    "inventory": "stock levels of products in warehouses",
    "hr": "employees, teams and leave requests",
    "tickets": "support tickets raised by customers",
    "wiki": "pages of the internal knowledge base",
    "chat": "messages in team chat channels",
    "email": "messages in the shared mailbox",
    "storage": "files in the cloud storage bucket",
    "dns": "DNS records of the company's domains",
    "monitoring": "alerts and metrics of production services",
    "ci": "builds and pipelines of the CI system",
    "calendar": "events in the team calendar",
    "maps": "places, addresses and routes",
    "weather": "weather observations and forecasts for cities",
    "finance": "exchange rates and currency amounts",
    "shipping": "parcels, shipments and their tracking",
    "analytics": "page views and events of the website",
    "auth": "user accounts, roles and sessions",
    "search": "the full-text index of documents",
}
VERBS = {
    "list": "List the {what}.",
    "get": "Get one item of the {what} by its id.",
    "create": "Create a new item in the {what}.",
    "update": "Change an existing item of the {what}.",
    "delete": "Delete an item of the {what}.",
    "search": "Search the {what} by keywords.",
}
ID = {"type": "integer", "description": "The item's numeric id."}
SPECIAL: dict[str, tuple[str, dict[str, Any]]] = {
    "weather_forecast": ("Forecast the weather of a city for the next days (temperature in "
                       "celsius or fahrenheit).", {
        "type": "object", "required": ["city", "unit", "days"],
        "properties": {"city": {"type": "string"},
                       "unit": {"enum": ["celsius", "fahrenheit"]},
                       "days": {"type": "integer", "minimum": 1, "maximum": 10}}}),
    "finance_convert_currency": ("Convert an amount of money from one currency to another "
                                 "at today's exchange rate (ISO 4217 codes such as EUR).", {
        "type": "object", "required": ["amount", "from_currency", "to_currency"],
        "properties": {"amount": {"type": "number"},
                       "from_currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
                       "to_currency": {"type": "string", "pattern": "^[A-Z]{3}$"}}}),
    "calendar_create_event": ("Create an event in the team calendar on a date (YYYY-MM-DD) for a "
                        "number of minutes.", {
        "type": "object", "required": ["title", "date", "duration_minutes"],
        "properties": {"title": {"type": "string"},
                       "date": {"type": "string", "pattern": r"^\d{4}-\d{2}-\d{2}$"},
                       "duration_minutes": {"type": "integer", "minimum": 1}}}),
    "tickets_set_status": ("Change the status of a support ticket (open, pending, closed).", {
        "type": "object", "required": ["id", "status"],
        "properties": {"id": ID, "status": {"enum": ["open", "pending", "closed"]}}}),
    "dns_resolve": ("Resolve a host name to its IP addresses from the company's DNS records.", {
        "type": "object", "required": ["hostname"],
        "properties": {"hostname": {"type": "string"}}}),
}


def tools() -> list[dict[str, Any]]:
    out = []
    for service, what in SERVICES.items():
        for verb, text in VERBS.items():
            schema = {"type": "object",
                      "properties": {"id": ID} if verb in ("get", "update", "delete")
                      else {"query": {"type": "string"}}}
            out.append({"name": f"{service}_{verb}", "description": text.format(what=what),
                        "inputSchema": schema})
    out += [{"name": name, "description": description, "inputSchema": schema}
            for name, (description, schema) in SPECIAL.items()]
    return out


def call(name: str, args: dict[str, Any]) -> str:
    if name == "weather_forecast":
        unit = "°F" if args.get("unit") == "fahrenheit" else "°C"
        highs = [68, 71, 64] if unit == "°F" else [20, 22, 18]
        return f"{args.get('city')}: " + ", ".join(
            f"day {i + 1} high {h}{unit}" for i, h in enumerate(highs[: args.get("days", 3)]))
    if name == "finance_convert_currency":
        return f"{args.get('amount')} {args.get('from_currency')} = " \
               f"{round(float(args.get('amount', 0)) * 1.08, 2)} {args.get('to_currency')}"
    if name == "dns_resolve":
        return f"{args.get('hostname')} has address 10.20.30.40"
    return json.dumps({"tool": name, "arguments": args, "result": "ok"})


class Catalog(MCPServer):
    """The generated tools, listed and called as plain data (no Python function each)."""

    async def list_tools(self) -> list[Tool]:
        return [Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
                for t in tools()]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> CallToolResult:
        return CallToolResult(content=[TextContent(type="text", text=call(name, arguments))])


if __name__ == "__main__":
    Catalog("catalog").run()
