package io.github.resultsync.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Descriptors.EnumValueDescriptor;
import com.google.protobuf.Message;
import com.google.rpc.BadRequest;
import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import io.github.resultsync.fitness.v1.ErrorReason;
import io.github.resultsync.fitness.v1.VersionConflict;
import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.Grpc;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.TlsChannelCredentials;
import io.grpc.protobuf.StatusProto;
import java.io.File;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executor;

/**
 * What every caller of resultsync's gRPC APIs needs besides the generated
 * stubs ({@code io.github.resultsync.fitness.v1.*Grpc}): a bearer token on
 * every call, a channel to a server (plaintext, or TLS with a private CA and
 * a client certificate; with resultsync's service config, {@link ServiceConfig}), and the typed details of an error: its reason as
 * the proto enum {@link ErrorReason}, its retry delay, its invalid fields,
 * a version conflict.
 *
 * <pre>{@code
 * ManagedChannel ch = Resultsync.plaintextChannel("127.0.0.1:7101");
 * var results = ResultServiceGrpc.newBlockingStub(ch).withCallCredentials(Resultsync.bearer("dev-operator"));
 * try {
 *   results.correctResult(request);
 * } catch (StatusRuntimeException e) {
 *   if (Resultsync.errorReason(e) != ErrorReason.VERSION_CONFLICT) throw e;
 *   Resultsync.versionConflict(e).ifPresent(c -> System.out.println("now at " + c.getCurrentVersion()));
 * }
 * }</pre>
 */
public final class Resultsync {
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);

  /** The {@code google.rpc.ErrorInfo} domain of every resultsync error. */
  public static final String DOMAIN = "resultsync.fitness.v1";

  private Resultsync() {}

  /**
   * Call credentials that send {@code authorization: Bearer <token>} with every
   * call of a stub ({@code stub.withCallCredentials(bearer(token))}). They are
   * sent on plaintext channels too (the local stack); use TLS in production.
   */
  public static CallCredentials bearer(String token) {
    return new CallCredentials() {
      @Override
      public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier applier) {
        Metadata headers = new Metadata();
        headers.put(AUTHORIZATION, "Bearer " + token);
        applier.apply(headers);
      }
    };
  }

  /**
   * A plaintext channel to {@code target} ("host:port"), e.g. the local stack,
   * with resultsync's service config ({@link ServiceConfig}: retries on
   * UNAVAILABLE for the methods safe to repeat, round-robin balancing).
   */
  public static ManagedChannel plaintextChannel(String target) {
    return ServiceConfig.applyTo(ManagedChannelBuilder.forTarget(target).usePlaintext()).build();
  }

  /**
   * TLS channel credentials from PEM files: {@code caFile} holds the CA
   * certificates that verify the server (null: the system roots), and
   * {@code certFile} with {@code keyFile} the client certificate presented to
   * a server that requires one (mutual TLS, {@code --tls-client-auth}); both
   * null for TLS without a client certificate. The files are read now.
   */
  public static ChannelCredentials tlsCredentials(String caFile, String certFile, String keyFile) throws IOException {
    if ((certFile == null) != (keyFile == null)) {
      throw new IllegalArgumentException("certFile and keyFile go together (mutual TLS needs both)");
    }
    TlsChannelCredentials.Builder b = TlsChannelCredentials.newBuilder();
    if (caFile != null) {
      b.trustManager(new File(caFile));
    }
    if (certFile != null) {
      b.keyManager(new File(certFile), new File(keyFile));
    }
    return b.build();
  }

  /**
   * A TLS channel to {@code target} ("host:port") with {@link #tlsCredentials}:
   * the private CA that verifies the server and, for mutual TLS, the client
   * certificate and key (both null without one); with resultsync's service
   * config ({@link ServiceConfig}).
   */
  public static ManagedChannel tlsChannel(String target, String caFile, String certFile, String keyFile)
      throws IOException {
    return ServiceConfig.applyTo(Grpc.newChannelBuilder(target, tlsCredentials(caFile, certFile, keyFile))).build();
  }

  /** The details of type {@code type} the server attached to {@code e} (its google.rpc.Status). */
  public static <T extends Message> List<T> details(StatusRuntimeException e, Class<T> type) {
    return detailsOf(e, type);
  }

  private static <T extends Message> List<T> detailsOf(Throwable e, Class<T> type) {
    List<T> out = new ArrayList<>();
    com.google.rpc.Status status = StatusProto.fromThrowable(e);
    if (status == null) {
      return out;
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(type)) {
        try {
          out.add(detail.unpack(type));
        } catch (InvalidProtocolBufferException ex) {
          throw new IllegalStateException("undecodable " + type.getSimpleName() + " detail", ex);
        }
      }
    }
    return out;
  }

  /**
   * The {@link VersionConflict} of an ABORTED correction or deletion (the version
   * the caller expected and the record's current one); empty for another error.
   */
  public static Optional<VersionConflict> versionConflict(StatusRuntimeException e) {
    if (e.getStatus().getCode() != Status.Code.ABORTED) {
      return Optional.empty();
    }
    return details(e, VersionConflict.class).stream().findFirst();
  }

  /**
   * The reason of {@code e} as the typed {@link ErrorReason}: the
   * {@code google.rpc.ErrorInfo} of domain {@link #DOMAIN} the server attached,
   * mapped by name ({@code ErrorReason.VERSION_CONFLICT}, ...).
   * {@code ERROR_REASON_UNSPECIFIED} when the error carries none or a reason
   * this client does not know yet: treat it by its status code.
   */
  public static ErrorReason errorReason(Throwable e) {
    for (ErrorInfo info : detailsOf(e, ErrorInfo.class)) {
      if (info.getDomain().equals(DOMAIN)) {
        EnumValueDescriptor v = ErrorReason.getDescriptor().findValueByName(info.getReason());
        return v == null ? ErrorReason.ERROR_REASON_UNSPECIFIED : ErrorReason.valueOf(v);
      }
    }
    return ErrorReason.ERROR_REASON_UNSPECIFIED;
  }

  /**
   * How long to wait before sending the same request again: the
   * {@code google.rpc.RetryInfo} of a CONTENTION, REQUEST_IN_PROGRESS,
   * UNAVAILABLE or RESOURCE_EXHAUSTED error (double it on each further
   * failure); empty when the server gave none.
   */
  public static Optional<Duration> retryDelay(Throwable e) {
    return detailsOf(e, RetryInfo.class).stream()
        .filter(RetryInfo::hasRetryDelay)
        .map(r -> Duration.ofSeconds(r.getRetryDelay().getSeconds(), r.getRetryDelay().getNanos()))
        .findFirst();
  }

  /**
   * The invalid fields of a FIELD_VIOLATION error (its {@code google.rpc.BadRequest}:
   * each field's name and what is wrong with it); empty for another error.
   */
  public static List<BadRequest.FieldViolation> fieldViolations(Throwable e) {
    List<BadRequest.FieldViolation> out = new ArrayList<>();
    for (BadRequest bad : detailsOf(e, BadRequest.class)) {
      out.addAll(bad.getFieldViolationsList());
    }
    return out;
  }
}
