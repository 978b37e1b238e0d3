"""Read-only SQLite access: the header check, a connection that never writes, queries into columns (ADBC or sqlite3).

pandas is imported only by the functions that build frames: the queries themselves run without it, so a read can
start while pandas loads (``nsys_reads``)."""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import numpy as np

from dashboard.errors import TraceFormatError, TraceNotFoundError

if TYPE_CHECKING:
    import pandas as pd

try:  # the fast columnar reader is optional; sqlite3 is always there. Not its DB-API module: that imports pandas.
    import adbc_driver_manager
    import adbc_driver_sqlite
    import pyarrow

    _HAVE_ADBC = True
except ImportError:  # pragma: no cover - depends on the environment
    _HAVE_ADBC = False


SQLITE_MAGIC = b"SQLite format 3\x00"
_I32 = np.iinfo(np.int32)


def damaged_header_message(path: Path) -> str:
    """The sentence for a file that starts with SQLite's header text but not a whole header: a cut or damaged
    SQLite file, which neither "not SQLite" nor "not a trace" describes."""
    size = path.stat().st_size
    short = f" ({size:,} bytes: a SQLite file is at least 512)" if size < 512 else ""
    return (
        f"{path.name}: starts like a SQLite database but its header is cut or damaged{short}; export the nsys "
        "report again: nsys export --type sqlite REPORT.nsys-rep"
    )


def check_sqlite_header(path: Path) -> None:
    """Raise ``TraceFormatError`` unless ``path`` starts with the SQLite 3 header."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise TraceNotFoundError(f"{path.name}: cannot be read ({exc.strerror or exc})") from exc
    if len(head) == 0:
        raise TraceFormatError(f"{path.name}: the file is empty (0 bytes), not an nsys SQLite export")
    if head != SQLITE_MAGIC and head.startswith(SQLITE_MAGIC[:15]):
        raise TraceFormatError(damaged_header_message(path))
    if head != SQLITE_MAGIC:
        raise TraceFormatError(not_sqlite_message(path))


def not_sqlite_message(path: Path) -> str:
    """What a file without the SQLite 3 header is told, where SQLite was expected (its name or the command)."""
    return (
        f"{path.name}: not a SQLite database (no 'SQLite format 3' header). Export an nsys "
        "report with: nsys export --type sqlite REPORT.nsys-rep"
    )


def readonly_uri(path: Path) -> str:
    """SQLite URI that opens ``path`` read-only and immutable (no lock, no side files)."""
    return "file:" + quote(str(Path(path).resolve())) + "?mode=ro&immutable=1"


class _Connection(sqlite3.Connection):
    tracedash_uri: str | None = None


def connect_readonly(path: Path) -> sqlite3.Connection:
    """Open ``path`` read-only and immutable: SQLite never writes, locks or creates side files."""
    uri = readonly_uri(path)
    con = sqlite3.connect(uri, uri=True, check_same_thread=False, factory=_Connection)
    con.tracedash_uri = uri
    return con


@contextmanager
def own_connection(con: sqlite3.Connection):
    """A connection of its own to ``con``'s file (read-only, immutable), for a read that runs beside others of
    ``con`` in another thread; ``con`` itself when it has no URI (a connection not opened by
    ``connect_readonly``). Closed on exit when it was opened here."""
    uri = getattr(con, "tracedash_uri", None)
    own = sqlite3.connect(uri, uri=True) if uri else con
    try:
        yield own
    finally:
        if own is not con:
            own.close()


def _query_sqlite3(con: sqlite3.Connection, sql: str, columns: list[str]) -> pd.DataFrame:
    import pandas as pd

    rows = con.execute(sql).fetchall()
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype="object") for c in columns})
    return records_frame(rows, columns)


_EXACT_IN_FLOAT = 2**53


def records_frame(rows: list[tuple], columns: list[str]) -> pd.DataFrame:
    """sqlite3 rows as a frame, each column typed as pandas infers it, except that a column pandas would make
    float64 (integers with NULLs or REALs) stays Python objects when it holds an integer beyond 2**53, which a
    float would round (a time in ns since the epoch); ``nsys_tables._int`` converts such a column exactly."""
    import pandas as pd

    data = {}
    for name, values in zip(columns, zip(*rows)):
        col = pd.Series(values)
        if col.dtype.kind == "f" and any(type(v) is int and abs(v) > _EXACT_IN_FLOAT for v in values):
            col = pd.Series(values, dtype=object)
        data[name] = col
    return pd.DataFrame(data, copy=False)


ADBC_BATCH_ROWS = 1 << 18


def _int_values(col) -> tuple[np.ndarray, np.ndarray | None]:
    """An Arrow integer column's values (0 where NULL) and NULL mask (None when it has no NULL), from its buffers.

    Why not Arrow's own ``to_numpy``, ``is_null`` and ``fill_null``: they import modules (``pyarrow.compute``,
    pandas' glue) in the read thread, which then waits for the main thread's import of pandas: at 2M kernels
    both reads stood idle for ~0.1–0.2 s. Nothing here imports a module."""
    import pyarrow as pa

    bits, data = col.buffers()[:2]
    first, n = col.offset, len(col)
    kind = "i" if pa.types.is_signed_integer(col.type) else "u"  # not to_pandas_dtype(): it imports pandas
    values = np.frombuffer(data, dtype=np.dtype(f"{kind}{col.type.bit_width // 8}"), count=first + n)[first:]
    if not col.null_count:
        return values, None
    values = values.copy()
    nulls = np.unpackbits(np.frombuffer(bits, dtype=np.uint8), count=first + n, bitorder="little")[first:] == 0
    values[nulls] = 0
    return values, nulls


class _Sink:
    """One column of a query's result, copied out of each Arrow batch as the batch arrives.

    Why: an ADBC batch is one C-data struct, so no column's buffers are freed before every column of
    its batch is; holding Arrow chunks until the end held the whole raw result beside its numpy copy
    (a 10M-kernel read peaked at 1.7x its size). Integer columns go straight into one numpy array of
    ``capacity`` rows (untouched pages cost no memory), grown by doubling when the hint is short.
    Other types (text, REAL, all-NULL) keep Arrow copies and are converted as Arrow gives them.
    ``narrow``: hold int32 while every value fits (ids), widened to int64 by the first batch that does not.
    """

    __slots__ = ("arrow", "capacity", "dtype", "mask", "n", "values")

    def __init__(self, capacity: int | None, narrow: bool = False):
        self.capacity = capacity
        self.dtype = np.dtype(np.int32 if narrow else np.int64)
        self.values: np.ndarray | None = None
        self.mask: np.ndarray | None = None
        self.arrow: list | None = None
        self.n = 0

    def add(self, col) -> None:
        import pyarrow as pa

        if not pa.types.is_integer(col.type):
            if self.values is not None:
                raise TypeError(f"a column mixes {col.type} with integers")  # the caller reads with sqlite3
            self.arrow = self.arrow or []
            self.arrow.append(pa.concat_arrays([col]))  # a copy, so the batch is freed
            self.n += len(col)
            return
        if self.arrow is not None:
            raise TypeError(f"a column mixes integers with {self.arrow[0].type}")
        k = len(col)
        self._reserve(self.n + k)
        end = self.n + k
        values, nulls = _int_values(col)
        if nulls is not None:
            if self.mask is None:
                self.mask = np.zeros(len(self.values), dtype=bool)
            self.mask[self.n : end] = nulls
        if self.dtype != np.int64 and k and (values.min() < _I32.min or values.max() > _I32.max):
            self._widen()
        self.values[self.n : end] = values
        self.n = end

    def _widen(self) -> None:
        if self.dtype == np.int64:
            return
        self.dtype = np.dtype(np.int64)
        if self.values is not None:  # only the rows held are copied: the rest of the capacity stays untouched
            wide = np.empty(len(self.values), dtype=np.int64)
            wide[: self.n] = self.values[: self.n]
            self.values = wide

    def _reserve(self, rows: int) -> None:
        size = 0 if self.values is None else len(self.values)
        if rows <= size:
            return
        grown = np.empty(max(rows, 2 * size, self.capacity or 0), dtype=self.dtype)
        if self.values is not None:
            grown[: self.n] = self.values[: self.n]
        self.values = grown
        if self.mask is not None:
            mask = np.zeros(len(grown), dtype=bool)
            mask[: self.n] = self.mask[: self.n]
            self.mask = mask

    def extend(self, other: "_Sink") -> None:
        """Append ``other``'s rows (a later rowid range of the same query), then empty it."""
        if other.n and (self.arrow is not None or other.arrow is not None):
            if (self.values is not None) or (other.values is not None):
                raise TypeError("a column mixes integers with other types across its parts")
            self.arrow = (self.arrow or []) + other.arrow
            self.n += other.n
        elif other.n:
            if other.dtype == np.int64:
                self._widen()
            self._reserve(self.n + other.n)
            end = self.n + other.n
            self.values[self.n : end] = other.values[: other.n]
            if other.mask is not None:
                if self.mask is None:
                    self.mask = np.zeros(len(self.values), dtype=bool)
                self.mask[self.n : end] = other.mask[: other.n]
            self.n = end
        other.values = other.mask = other.arrow = None

    def result(self) -> np.ndarray | pd.arrays.IntegerArray | pd.Series:
        """The column: int64, or int32 if narrow (an ``IntegerArray`` with its NULL mask when it has NULLs),
        else what Arrow gives (str as object); an empty object Series when no batch came.

        Raises:
            pyarrow.ArrowInvalid: the column's batches disagree on a type (the caller reads with sqlite3).
        """
        import pandas as pd
        import pyarrow as pa

        if self.arrow is not None:
            values = pa.chunked_array(self.arrow).to_numpy(zero_copy_only=False)
            return values if values.flags.writeable else values.copy()
        if self.values is None:
            return pd.Series([], dtype="object")
        values = self.values[: self.n]
        if self.mask is not None:
            return pd.arrays.IntegerArray(values, self.mask[: self.n])
        return values


def _fetch_columns(
    uri: str, sql: str, n_columns: int, capacity: int | None = None, narrow: tuple[bool, ...] = ()
) -> list[_Sink]:
    """Stream a query's record batches (ADBC) into one ``_Sink`` per column, each batch copied out and freed
    as it arrives: memory peaks at about the size of the result. ``capacity``: the rows expected (an
    upper bound: a table's row count), so each integer column is allocated once; ``narrow[i]``: column i
    is an id, held as int32 while its values fit."""
    sinks = [_Sink(capacity, i < len(narrow) and narrow[i]) for i in range(n_columns)]
    for batch in adbc_batches(uri, sql):
        for sink, col in zip(sinks, batch.columns):
            sink.add(col)
        del batch
    return sinks


def adbc_batches(uri: str, sql: str):
    """The Arrow record batches of a query through ADBC, ``ADBC_BATCH_ROWS`` rows each (the last fewer). Through the
    driver manager's statements, not its DB-API module, which imports pandas.

    Raises:
        Exception: whatever ADBC raises, e.g. for a column that mixes types (callers read with sqlite3 then).
    """
    with (
        adbc_driver_sqlite.connect(uri) as db,
        adbc_driver_manager.AdbcConnection(db) as conn,
        adbc_driver_manager.AdbcStatement(conn) as statement,
    ):
        # Large batches: few big copies instead of ~1,000-row crumbs.
        statement.set_options(**{"adbc.sqlite.query.batch_rows": str(ADBC_BATCH_ROWS)})
        statement.set_sql_query(sql)
        stream, _ = statement.execute_query()
        with pyarrow.RecordBatchReader._import_from_c(stream.address) as reader:
            yield from reader


def _chunks_to_frame(parts: list[list[_Sink]], columns: list[str]) -> pd.DataFrame:
    """Join the columns of one or more queries (rowid ranges, in order) into a frame, column by column."""
    import pandas as pd

    data = {}
    for i, name in enumerate(columns):
        head = parts[0][i]
        for part in parts[1:]:
            head.extend(part[i])
        data[name] = head.result()
        parts[0][i] = None  # the frame holds the column now
    return pd.DataFrame(data, copy=False)


def _query_adbc(uri: str, sql: str, columns: list[str]) -> pd.DataFrame:
    """Columnar read through ADBC (Apache Arrow's SQLite driver): about 5x faster than sqlite3 rows."""
    return _chunks_to_frame([_fetch_columns(uri, sql, len(columns))], columns)


def _query(con: sqlite3.Connection, sql: str, columns: list[str]) -> pd.DataFrame:
    """Run ``sql`` and return a frame with ``columns``: ADBC when installed, else sqlite3.

    ADBC infers one Arrow type per column; SQLite columns that mix types (user-edited exports)
    make it fail, and then the row-wise sqlite3 reader is used instead.
    """
    uri = getattr(con, "tracedash_uri", None)
    if uri and _HAVE_ADBC:
        try:
            return _query_adbc(uri, sql, columns)
        except Exception:  # noqa: BLE001 - any ADBC failure falls back to the exact sqlite3 path
            pass
    return _query_sqlite3(con, sql, columns)


def _q(identifier: str) -> str:
    """Quote an SQL identifier (table or column names may contain any character)."""
    return '"' + str(identifier).replace('"', '""') + '"'


def _col(cols: tuple[str, ...], name: str, default: str = "NULL") -> str:
    return _q(name) if name in cols else default


def _count(con: sqlite3.Connection, table: str | None) -> int:
    """Rows of ``table`` (0 for None)."""
    return int(con.execute(f"SELECT count(*) FROM {_q(table)}").fetchone()[0]) if table else 0
