"""The mail folder's files: the print vendor's CSV, a QR image per recipient, the proof sheet.

The CSV writer applies `spreadsheet_safe` to every cell; the proof sheet (fpdf2) shows each
piece as the vendor will print it, one page each. Written into a temporary folder that
`welcomemat mail` renames into place only after the preflight passed.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path

from outbound.mail_plan import MAIL_COLUMNS, QR_FOLDER, Recipient
from outbound.qr_image import write_qr_image
from welcomemat.spreadsheet import spreadsheet_safe

__all__ = ["PROOF_FILE", "VENDOR_FILE", "write_mail_folder", "write_proof_sheet"]

VENDOR_FILE = "recipients.csv"
PROOF_FILE = "proof.pdf"


def write_mail_folder(recipients: list[Recipient], folder: Path) -> None:
    """The vendor file, one QR image per recipient and the proof sheet, into `folder`."""
    (folder / QR_FOLDER).mkdir()
    for recipient in recipients:
        write_qr_image(recipient.qr_url, folder / recipient.cells["qr_image"])
    with open(folder / VENDOR_FILE, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\r\n")
        writer.writerow(MAIL_COLUMNS)
        for recipient in recipients:
            writer.writerow([spreadsheet_safe(recipient.cells[c]) for c in MAIL_COLUMNS])
    write_proof_sheet(recipients, folder, folder / PROOF_FILE)


_A5_MM = (148.0, 210.0)  # the proof page (landscape): a postcard-sized sheet
_UNICODE_FONT = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def write_proof_sheet(recipients: Iterable[Recipient], folder: Path, path: Path) -> None:
    """One A5-landscape page per recipient: the address, the line, the QR and the claim's provenance."""
    from fpdf import FPDF

    pdf = FPDF(orientation="landscape", unit="mm", format=_A5_MM)
    pdf.set_auto_page_break(auto=False)
    pdf.set_margins(10, 10, 10)
    if _UNICODE_FONT.is_file():
        pdf.add_font("Body", fname=str(_UNICODE_FONT))
        font, text = "Body", _as_is
    else:  # the PDF core fonts cover Latin-1 only: anything else shows as `?`
        font, text = "Helvetica", _latin1
    for recipient in recipients:
        cells = recipient.cells
        pdf.add_page()
        pdf.set_font(font, size=9)
        who = " ".join(p for p in (cells["first_name"], cells["last_name"]) if p) or cells["contact_id"]
        address = [cells["company"], cells["address_line1"], cells["address_line2"]]
        address += [" ".join(p for p in (cells["postal_code"], cells["city"], cells["region"]) if p)]
        address += [cells["country"]]
        pdf.multi_cell(120, 4.5, text("\n".join([who, *[a for a in address if a]])))
        pdf.image(str(folder / cells["qr_image"]), x=150, y=10, w=50, h=50)
        pdf.set_xy(10, 62)
        pdf.set_font(font, size=14)
        pdf.multi_cell(190, 7, text(cells["line"] or "(no line)"))
        pdf.set_font(font, size=8)
        pdf.ln(3)
        claim = (
            [f"Claim: {cells['fact']}", f"Source: {cells['fact_url']}", f"Published: {cells['fact_date']}"]
            if cells["fact"]
            else ["Claim: none (segment copy)"]
        )
        tail = [f"Status: {cells['status']}   Rung: {cells['rung']}", f"QR: {cells['qr_url']}"]
        pdf.multi_cell(190, 4, text("\n".join([*claim, *tail])))
    pdf.output(str(path))


def _as_is(value: str) -> str:
    return value


def _latin1(value: str) -> str:
    return value.encode("latin-1", "replace").decode("latin-1")
