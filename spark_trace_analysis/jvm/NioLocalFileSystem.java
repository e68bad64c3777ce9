package kraftcheck.spark;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * The stats job's {@code file:} file system (spark_trace_analysis/session.py sets
 * {@code spark.hadoop.fs.file.impl} to it on a local master): Hadoop's local file system,
 * with two differences.
 *
 * <ul>
 *   <li>Permissions are set through {@code java.nio}.  Without Hadoop's native library (pip's
 *       pyspark has none) {@code RawLocalFileSystem.setPermission} runs a {@code chmod}
 *       process for every folder and file Spark writes: 286 processes per stats run on the
 *       demo corpus, each on the writing thread's path.</li>
 *   <li>No {@code .crc} checksum files are written or verified: the outputs are read by
 *       Spark and pyarrow, which check Parquet's own page checksums where written; the
 *       {@code .crc} beside each file doubled the files created.</li>
 * </ul>
 * Everything else (paths, listing, renames, the committer's behaviour) is Hadoop's.
 */
public final class NioLocalFileSystem extends LocalFileSystem {

  public NioLocalFileSystem() {
    super(new NioRaw());
    setWriteChecksum(false);
    setVerifyChecksum(false);
  }

  /** RawLocalFileSystem with setPermission through java.nio (no chmod process). */
  public static final class NioRaw extends RawLocalFileSystem {
    private static final PosixFilePermission[] BITS = {
        PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
        PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
        PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
        PosixFilePermission.OWNER_READ};

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      int mode = permission.toShort();
      Set<PosixFilePermission> perms = EnumSet.noneOf(PosixFilePermission.class);
      for (int i = 0; i < BITS.length; i++) {
        if ((mode & (1 << i)) != 0) {
          perms.add(BITS[i]);
        }
      }
      Files.setPosixFilePermissions(pathToFile(p).toPath(), perms);
    }
  }
}
