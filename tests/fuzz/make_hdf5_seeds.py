#!/usr/bin/python3
"""Writes the seed corpus of fuzz_hdf5: small HDF5 files in the layout ebla reads
(solvers/include/ebla/solvers/io.hpp), valid ones in every accepted type, byte order and
storage, and one defect each for the error paths. Run with h5py: /usr/bin/python3
tests/fuzz/make_hdf5_seeds.py tests/fuzz/corpus/fuzz_hdf5"""
import os
import sys

import h5py
import numpy as np

# a 3 x 3 matrix with both triangles, one tiny value
ROW_PTR = [0, 2, 3, 5]
COL_IDX = [0, 2, 1, 0, 2]
VALUES = [4.0, -1.5, 0.1, -1.0, 1e-300]


def compact():
    """Raw data inside the object header: the smallest files with the old format."""
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    return {"dcpl": dcpl}


def matrix(f, group="A", ptr=ROW_PTR, col=COL_IDX, val=VALUES, ptr_type="<u8", col_type="<i4",
           val_type="<f8", ncols=None, **storage):
    if group not in f:
        gcpl = h5py.h5p.create(h5py.h5p.GROUP_CREATE)
        gcpl.set_obj_track_times(False)
        h5py.h5g.create(f.id, group.encode(), gcpl=gcpl)
    g = f[group]
    g.create_dataset("row_ptr", data=np.array(ptr, dtype=ptr_type), **storage)
    g.create_dataset("col_idx", data=np.array(col, dtype=col_type), **storage)
    g.create_dataset("values", data=np.array(val, dtype=val_type), **storage)
    if ncols is not None:
        g.attrs.create("ncols", ncols, dtype="<i8")


def vectors(f, n=3, **storage):
    f.create_dataset("b", data=np.arange(1.0, n + 1), **storage)
    f.create_dataset("x0", data=np.full(n, 0.5, dtype=">f8"), **storage)


def main(out):
    os.makedirs(out, exist_ok=True)

    def write(name, fill, libver="earliest"):
        # "earliest": object headers without checksums, so that mutations of sizes and
        # types reach ebla's checks instead of HDF5's; "latest": the compact new format.
        # No modification times anywhere: the same bytes on every run.
        fapl = h5py.h5p.create(h5py.h5p.FILE_ACCESS)
        fapl.set_libver_bounds(*{"earliest": (h5py.h5f.LIBVER_EARLIEST, h5py.h5f.LIBVER_LATEST),
                                 "latest": (h5py.h5f.LIBVER_LATEST, h5py.h5f.LIBVER_LATEST)}[libver])
        fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
        fcpl.set_obj_track_times(False)
        fid = h5py.h5f.create(os.path.join(out, name).encode(), h5py.h5f.ACC_TRUNC, fapl=fapl, fcpl=fcpl)
        with h5py.File(fid) as f:
            fill(f)

    write("matrix_and_vectors.h5", lambda f: (matrix(f), vectors(f)))  # contiguous
    write("latest_format.h5", lambda f: (matrix(f), vectors(f)), libver="latest")
    write("chunked_deflate.h5", lambda f: (matrix(f, chunks=(2,), compression="gzip"),
                                           vectors(f, chunks=(2,), compression="gzip")), libver="latest")
    write("compact.h5", lambda f: (matrix(f, **compact()), vectors(f, **compact())))
    write("int64_big_endian.h5", lambda f: matrix(f, ptr_type=">i8", col_type=">i8", val_type=">f8",
                                                  **compact()))
    write("rectangular_ncols.h5", lambda f: matrix(f, ptr=[0, 1, 3], col=[4, 0, 3], val=[1.0, 2.0, 3.0],
                                                   ncols=5, **compact()))
    write("empty_matrix.h5", lambda f: matrix(f, ptr=[0], col=[], val=[]))
    write("vectors_only.h5", lambda f: vectors(f, n=4, **compact()))
    write("defect_offsets.h5", lambda f: matrix(f, ptr=[0, 3, 2, 5], **compact()))
    write("defect_column.h5", lambda f: matrix(f, col=[0, 2, 1, 0, 3], **compact()))
    write("defect_nan.h5", lambda f: (matrix(f, val=[4.0, float("nan"), 0.1, -1.0, 1.0], **compact()),
                                      vectors(f, **compact())))
    write("defect_types.h5", lambda f: matrix(f, ptr_type="<u4", col_type="<u8", val_type="<f4",
                                              **compact()))
    for name in sorted(os.listdir(out)):
        print(f"{name:28s} {os.path.getsize(os.path.join(out, name)):6d} bytes")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "fuzz_hdf5"))
