"""Pages of one template with unrelated bodies (Tcl/Tk manual pages, their help-viewer
rendering and their Chinese translation): alike in form, not near-duplicates."""

from __future__ import annotations

BODIES = [
    "The button command creates a new window and makes it into a button widget. Additional "
    "options may be specified to configure aspects of the button such as its colors and font.",
    "A canvas widget implements structured graphics. It displays any number of items, which "
    "may be things like rectangles, circles, lines and text, and they may be moved around.",
    "The after command delays execution of the program for a number of milliseconds, or "
    "arranges for a script to run later as an event handler once the time has elapsed.",
    "Glob returns a list of the files whose names match any of the pattern arguments. The "
    "patterns use csh rules: asterisks, question marks, brackets and braces are special.",
    "The scale command makes a slider that lets the user choose a numerical value by moving "
    "the slider along a trough; the current value is shown next to it as a label.",
    "Socket opens a network connection over TCP and returns a channel identifier that may be "
    "used in future invocations of read, puts and close to talk with the peer.",
]
ZH_BODIES = [
    "该命令创建一个新窗口并把它变成按钮部件。可以指定附加选项来配置按钮的颜色和字体等方面。",
    "画布部件实现结构化图形。它可以显示任意数量的项目，例如矩形、圆形、直线和文本，并且可以移动它们。",
    "这个命令把程序的执行延迟若干毫秒，或者安排一个脚本在时间到达以后作为事件处理程序运行。",
    "返回名字与任何模式参数匹配的文件列表。模式使用外壳的规则：星号、问号、方括号和花括号都有特殊含义。",
    "刻度命令创建一个滑块，用户可以沿着槽移动滑块来选择一个数值；当前的值作为标签显示在旁边。",
    "套接字命令打开一个网络连接并返回一个通道标识符，以后可以用读取、写入和关闭命令与对端通信。",
]
NAMES = ["button", "canvas", "after", "glob", "scale", "socket"]


def tcl_page(name: str, body: str) -> str:
    """A Tcl/Tk manual page as nroff draws it: lines of underscores around the synopsis."""
    rule = "_" * 79
    return (f"{name}(n)            Tk Built-In Commands            {name}(n)\n{rule}\n\nNAME\n"
            f"       {name} - Create and manipulate widgets\nSYNOPSIS\n       {name} pathName ?options?\n"
            f"{rule}\n\nDESCRIPTION\n       {body}\n\nKEYWORDS\n       {name}, widget\n\n"
            f"Tk                              8.6                          {name}(n)\n")


def help_page(name: str, body: str) -> str:
    """A help page of one template: navigation, separators and footer around a short body."""
    return ("LibreOffice 7.4 Help\nModule\nContents\nIndex\n" + "=" * 60 + "\n"
            f"{name.title()}\n" + "-" * 60 + f"\n{body}\n" + "." * 60 + "\n"
            "Related Topics\nPlease support us!\nDonate\n" + "─" * 40 + "\n")


def zh_page(name: str, body: str) -> str:
    """A Chinese manual page of the same template (Tcl/Tk pages translated in manpages-zh)."""
    rule = "_" * 79
    return (f"{name}(n)            Tk 内建命令            {name}(n)\n{rule}\n\n名称\n       {name} - 创建和操纵部件\n"
            f"总览\n       {name} pathName ?options?\n{rule}\n\n描述\n       {body}\n\n关键字\n       {name}, 部件\n")


TEMPLATES = {
    "tcl": [tcl_page(n, b) for n, b in zip(NAMES, BODIES, strict=True)],
    "help": [help_page(n, b) for n, b in zip(NAMES, BODIES, strict=True)],
    "zh": [zh_page(n, b) for n, b in zip(NAMES, ZH_BODIES, strict=True)],
}
