"""Build an English-German parallel corpus from Debian's own translations.

One module per job:
  aptrepo      private apt state, package download and unpacking
  libreoffice  LibreOffice help, paired by par_id / hd_id
  descriptions Debian package descriptions (Translation-en / Translation-de)
  manpages     man pages (manpages, manpages-dev vs manpages-de, manpages-de-dev)
  dictionary   example sentences of the trans-de-en (Ding) dictionary
  gettext_mo   gettext .mo catalogues (named so as not to shadow stdlib gettext)
  heldout      gnome-user-docs, debian-reference, wesnoth: kept out of the corpus
  clean        normalisation and filtering rules shared by every source
  split        train / dev / test by document, deduplication, leak removal
  manifest     licences, checksums and the manifest.json writer
  pipeline     the order in which the above run
"""

from typing import NamedTuple


class Pair(NamedTuple):
    """One aligned segment pair.

    `doc` is the unit that must never be split across train/dev/test
    (a LibreOffice module, a man page, a source package, a catalogue's package).
    """
    source: str
    doc: str
    en: str
    de: str
