package io.github.resultsync.fitness.v1;

import static io.grpc.MethodDescriptor.generateFullMethodName;

/**
 * <pre>
 * ProjectionService reports the state of the ClickHouse projection that the
 * consumer maintains: lag per shard and dead-lettered events.
 * </pre>
 */
@io.grpc.stub.annotations.GrpcGenerated
public final class ProjectionServiceGrpc {

  private ProjectionServiceGrpc() {}

  public static final java.lang.String SERVICE_NAME = "fitness.v1.ProjectionService";

  // Static method descriptors that strictly reflect the proto.
  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetProjectionStatusRequest,
      io.github.resultsync.fitness.v1.GetProjectionStatusResponse> getGetProjectionStatusMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "GetProjectionStatus",
      requestType = io.github.resultsync.fitness.v1.GetProjectionStatusRequest.class,
      responseType = io.github.resultsync.fitness.v1.GetProjectionStatusResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetProjectionStatusRequest,
      io.github.resultsync.fitness.v1.GetProjectionStatusResponse> getGetProjectionStatusMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.GetProjectionStatusRequest, io.github.resultsync.fitness.v1.GetProjectionStatusResponse> getGetProjectionStatusMethod;
    if ((getGetProjectionStatusMethod = ProjectionServiceGrpc.getGetProjectionStatusMethod) == null) {
      synchronized (ProjectionServiceGrpc.class) {
        if ((getGetProjectionStatusMethod = ProjectionServiceGrpc.getGetProjectionStatusMethod) == null) {
          ProjectionServiceGrpc.getGetProjectionStatusMethod = getGetProjectionStatusMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.GetProjectionStatusRequest, io.github.resultsync.fitness.v1.GetProjectionStatusResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "GetProjectionStatus"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetProjectionStatusRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.GetProjectionStatusResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ProjectionServiceMethodDescriptorSupplier("GetProjectionStatus"))
              .build();
        }
      }
    }
    return getGetProjectionStatusMethod;
  }

  private static volatile io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListDeadLettersRequest,
      io.github.resultsync.fitness.v1.ListDeadLettersResponse> getListDeadLettersMethod;

  @io.grpc.stub.annotations.RpcMethod(
      fullMethodName = SERVICE_NAME + '/' + "ListDeadLetters",
      requestType = io.github.resultsync.fitness.v1.ListDeadLettersRequest.class,
      responseType = io.github.resultsync.fitness.v1.ListDeadLettersResponse.class,
      methodType = io.grpc.MethodDescriptor.MethodType.UNARY)
  public static io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListDeadLettersRequest,
      io.github.resultsync.fitness.v1.ListDeadLettersResponse> getListDeadLettersMethod() {
    io.grpc.MethodDescriptor<io.github.resultsync.fitness.v1.ListDeadLettersRequest, io.github.resultsync.fitness.v1.ListDeadLettersResponse> getListDeadLettersMethod;
    if ((getListDeadLettersMethod = ProjectionServiceGrpc.getListDeadLettersMethod) == null) {
      synchronized (ProjectionServiceGrpc.class) {
        if ((getListDeadLettersMethod = ProjectionServiceGrpc.getListDeadLettersMethod) == null) {
          ProjectionServiceGrpc.getListDeadLettersMethod = getListDeadLettersMethod =
              io.grpc.MethodDescriptor.<io.github.resultsync.fitness.v1.ListDeadLettersRequest, io.github.resultsync.fitness.v1.ListDeadLettersResponse>newBuilder()
              .setType(io.grpc.MethodDescriptor.MethodType.UNARY)
              .setFullMethodName(generateFullMethodName(SERVICE_NAME, "ListDeadLetters"))
              .setSampledToLocalTracing(true)
              .setRequestMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListDeadLettersRequest.getDefaultInstance()))
              .setResponseMarshaller(io.grpc.protobuf.ProtoUtils.marshaller(
                  io.github.resultsync.fitness.v1.ListDeadLettersResponse.getDefaultInstance()))
              .setSchemaDescriptor(new ProjectionServiceMethodDescriptorSupplier("ListDeadLetters"))
              .build();
        }
      }
    }
    return getListDeadLettersMethod;
  }

  /**
   * Creates a new async stub that supports all call types for the service
   */
  public static ProjectionServiceStub newStub(io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceStub>() {
        @java.lang.Override
        public ProjectionServiceStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ProjectionServiceStub(channel, callOptions);
        }
      };
    return ProjectionServiceStub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports all types of calls on the service
   */
  public static ProjectionServiceBlockingV2Stub newBlockingV2Stub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceBlockingV2Stub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceBlockingV2Stub>() {
        @java.lang.Override
        public ProjectionServiceBlockingV2Stub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ProjectionServiceBlockingV2Stub(channel, callOptions);
        }
      };
    return ProjectionServiceBlockingV2Stub.newStub(factory, channel);
  }

  /**
   * Creates a new blocking-style stub that supports unary and streaming output calls on the service
   */
  public static ProjectionServiceBlockingStub newBlockingStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceBlockingStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceBlockingStub>() {
        @java.lang.Override
        public ProjectionServiceBlockingStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ProjectionServiceBlockingStub(channel, callOptions);
        }
      };
    return ProjectionServiceBlockingStub.newStub(factory, channel);
  }

  /**
   * Creates a new ListenableFuture-style stub that supports unary calls on the service
   */
  public static ProjectionServiceFutureStub newFutureStub(
      io.grpc.Channel channel) {
    io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceFutureStub> factory =
      new io.grpc.stub.AbstractStub.StubFactory<ProjectionServiceFutureStub>() {
        @java.lang.Override
        public ProjectionServiceFutureStub newStub(io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
          return new ProjectionServiceFutureStub(channel, callOptions);
        }
      };
    return ProjectionServiceFutureStub.newStub(factory, channel);
  }

  /**
   * <pre>
   * ProjectionService reports the state of the ClickHouse projection that the
   * consumer maintains: lag per shard and dead-lettered events.
   * </pre>
   */
  public interface AsyncService {

    /**
     * <pre>
     * Returns projection lag per shard and consumer counters.
     * </pre>
     */
    default void getProjectionStatus(io.github.resultsync.fitness.v1.GetProjectionStatusRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetProjectionStatusResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getGetProjectionStatusMethod(), responseObserver);
    }

    /**
     * <pre>
     * Lists events sent to the dead-letter topic, newest first.
     * </pre>
     */
    default void listDeadLetters(io.github.resultsync.fitness.v1.ListDeadLettersRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListDeadLettersResponse> responseObserver) {
      io.grpc.stub.ServerCalls.asyncUnimplementedUnaryCall(getListDeadLettersMethod(), responseObserver);
    }
  }

  /**
   * Base class for the server implementation of the service ProjectionService.
   * <pre>
   * ProjectionService reports the state of the ClickHouse projection that the
   * consumer maintains: lag per shard and dead-lettered events.
   * </pre>
   */
  public static abstract class ProjectionServiceImplBase
      implements io.grpc.BindableService, AsyncService {

    @java.lang.Override public final io.grpc.ServerServiceDefinition bindService() {
      return ProjectionServiceGrpc.bindService(this);
    }
  }

  /**
   * A stub to allow clients to do asynchronous rpc calls to service ProjectionService.
   * <pre>
   * ProjectionService reports the state of the ClickHouse projection that the
   * consumer maintains: lag per shard and dead-lettered events.
   * </pre>
   */
  public static final class ProjectionServiceStub
      extends io.grpc.stub.AbstractAsyncStub<ProjectionServiceStub> {
    private ProjectionServiceStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ProjectionServiceStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ProjectionServiceStub(channel, callOptions);
    }

    /**
     * <pre>
     * Returns projection lag per shard and consumer counters.
     * </pre>
     */
    public void getProjectionStatus(io.github.resultsync.fitness.v1.GetProjectionStatusRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetProjectionStatusResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getGetProjectionStatusMethod(), getCallOptions()), request, responseObserver);
    }

    /**
     * <pre>
     * Lists events sent to the dead-letter topic, newest first.
     * </pre>
     */
    public void listDeadLetters(io.github.resultsync.fitness.v1.ListDeadLettersRequest request,
        io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListDeadLettersResponse> responseObserver) {
      io.grpc.stub.ClientCalls.asyncUnaryCall(
          getChannel().newCall(getListDeadLettersMethod(), getCallOptions()), request, responseObserver);
    }
  }

  /**
   * A stub to allow clients to do synchronous rpc calls to service ProjectionService.
   * <pre>
   * ProjectionService reports the state of the ClickHouse projection that the
   * consumer maintains: lag per shard and dead-lettered events.
   * </pre>
   */
  public static final class ProjectionServiceBlockingV2Stub
      extends io.grpc.stub.AbstractBlockingStub<ProjectionServiceBlockingV2Stub> {
    private ProjectionServiceBlockingV2Stub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ProjectionServiceBlockingV2Stub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ProjectionServiceBlockingV2Stub(channel, callOptions);
    }

    /**
     * <pre>
     * Returns projection lag per shard and consumer counters.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetProjectionStatusResponse getProjectionStatus(io.github.resultsync.fitness.v1.GetProjectionStatusRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getGetProjectionStatusMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists events sent to the dead-letter topic, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListDeadLettersResponse listDeadLetters(io.github.resultsync.fitness.v1.ListDeadLettersRequest request) throws io.grpc.StatusException {
      return io.grpc.stub.ClientCalls.blockingV2UnaryCall(
          getChannel(), getListDeadLettersMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do limited synchronous rpc calls to service ProjectionService.
   * <pre>
   * ProjectionService reports the state of the ClickHouse projection that the
   * consumer maintains: lag per shard and dead-lettered events.
   * </pre>
   */
  public static final class ProjectionServiceBlockingStub
      extends io.grpc.stub.AbstractBlockingStub<ProjectionServiceBlockingStub> {
    private ProjectionServiceBlockingStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ProjectionServiceBlockingStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ProjectionServiceBlockingStub(channel, callOptions);
    }

    /**
     * <pre>
     * Returns projection lag per shard and consumer counters.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.GetProjectionStatusResponse getProjectionStatus(io.github.resultsync.fitness.v1.GetProjectionStatusRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getGetProjectionStatusMethod(), getCallOptions(), request);
    }

    /**
     * <pre>
     * Lists events sent to the dead-letter topic, newest first.
     * </pre>
     */
    public io.github.resultsync.fitness.v1.ListDeadLettersResponse listDeadLetters(io.github.resultsync.fitness.v1.ListDeadLettersRequest request) {
      return io.grpc.stub.ClientCalls.blockingUnaryCall(
          getChannel(), getListDeadLettersMethod(), getCallOptions(), request);
    }
  }

  /**
   * A stub to allow clients to do ListenableFuture-style rpc calls to service ProjectionService.
   * <pre>
   * ProjectionService reports the state of the ClickHouse projection that the
   * consumer maintains: lag per shard and dead-lettered events.
   * </pre>
   */
  public static final class ProjectionServiceFutureStub
      extends io.grpc.stub.AbstractFutureStub<ProjectionServiceFutureStub> {
    private ProjectionServiceFutureStub(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      super(channel, callOptions);
    }

    @java.lang.Override
    protected ProjectionServiceFutureStub build(
        io.grpc.Channel channel, io.grpc.CallOptions callOptions) {
      return new ProjectionServiceFutureStub(channel, callOptions);
    }

    /**
     * <pre>
     * Returns projection lag per shard and consumer counters.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.GetProjectionStatusResponse> getProjectionStatus(
        io.github.resultsync.fitness.v1.GetProjectionStatusRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getGetProjectionStatusMethod(), getCallOptions()), request);
    }

    /**
     * <pre>
     * Lists events sent to the dead-letter topic, newest first.
     * </pre>
     */
    public com.google.common.util.concurrent.ListenableFuture<io.github.resultsync.fitness.v1.ListDeadLettersResponse> listDeadLetters(
        io.github.resultsync.fitness.v1.ListDeadLettersRequest request) {
      return io.grpc.stub.ClientCalls.futureUnaryCall(
          getChannel().newCall(getListDeadLettersMethod(), getCallOptions()), request);
    }
  }

  private static final int METHODID_GET_PROJECTION_STATUS = 0;
  private static final int METHODID_LIST_DEAD_LETTERS = 1;

  private static final class MethodHandlers<Req, Resp> implements
      io.grpc.stub.ServerCalls.UnaryMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ServerStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.ClientStreamingMethod<Req, Resp>,
      io.grpc.stub.ServerCalls.BidiStreamingMethod<Req, Resp> {
    private final AsyncService serviceImpl;
    private final int methodId;

    MethodHandlers(AsyncService serviceImpl, int methodId) {
      this.serviceImpl = serviceImpl;
      this.methodId = methodId;
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public void invoke(Req request, io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        case METHODID_GET_PROJECTION_STATUS:
          serviceImpl.getProjectionStatus((io.github.resultsync.fitness.v1.GetProjectionStatusRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.GetProjectionStatusResponse>) responseObserver);
          break;
        case METHODID_LIST_DEAD_LETTERS:
          serviceImpl.listDeadLetters((io.github.resultsync.fitness.v1.ListDeadLettersRequest) request,
              (io.grpc.stub.StreamObserver<io.github.resultsync.fitness.v1.ListDeadLettersResponse>) responseObserver);
          break;
        default:
          throw new AssertionError();
      }
    }

    @java.lang.Override
    @java.lang.SuppressWarnings("unchecked")
    public io.grpc.stub.StreamObserver<Req> invoke(
        io.grpc.stub.StreamObserver<Resp> responseObserver) {
      switch (methodId) {
        default:
          throw new AssertionError();
      }
    }
  }

  public static final io.grpc.ServerServiceDefinition bindService(AsyncService service) {
    return io.grpc.ServerServiceDefinition.builder(getServiceDescriptor())
        .addMethod(
          getGetProjectionStatusMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.GetProjectionStatusRequest,
              io.github.resultsync.fitness.v1.GetProjectionStatusResponse>(
                service, METHODID_GET_PROJECTION_STATUS)))
        .addMethod(
          getListDeadLettersMethod(),
          io.grpc.stub.ServerCalls.asyncUnaryCall(
            new MethodHandlers<
              io.github.resultsync.fitness.v1.ListDeadLettersRequest,
              io.github.resultsync.fitness.v1.ListDeadLettersResponse>(
                service, METHODID_LIST_DEAD_LETTERS)))
        .build();
  }

  private static abstract class ProjectionServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoFileDescriptorSupplier, io.grpc.protobuf.ProtoServiceDescriptorSupplier {
    ProjectionServiceBaseDescriptorSupplier() {}

    @java.lang.Override
    public com.google.protobuf.Descriptors.FileDescriptor getFileDescriptor() {
      return io.github.resultsync.fitness.v1.ProjectionProto.getDescriptor();
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.ServiceDescriptor getServiceDescriptor() {
      return getFileDescriptor().findServiceByName("ProjectionService");
    }
  }

  private static final class ProjectionServiceFileDescriptorSupplier
      extends ProjectionServiceBaseDescriptorSupplier {
    ProjectionServiceFileDescriptorSupplier() {}
  }

  private static final class ProjectionServiceMethodDescriptorSupplier
      extends ProjectionServiceBaseDescriptorSupplier
      implements io.grpc.protobuf.ProtoMethodDescriptorSupplier {
    private final java.lang.String methodName;

    ProjectionServiceMethodDescriptorSupplier(java.lang.String methodName) {
      this.methodName = methodName;
    }

    @java.lang.Override
    public com.google.protobuf.Descriptors.MethodDescriptor getMethodDescriptor() {
      return getServiceDescriptor().findMethodByName(methodName);
    }
  }

  private static volatile io.grpc.ServiceDescriptor serviceDescriptor;

  public static io.grpc.ServiceDescriptor getServiceDescriptor() {
    io.grpc.ServiceDescriptor result = serviceDescriptor;
    if (result == null) {
      synchronized (ProjectionServiceGrpc.class) {
        result = serviceDescriptor;
        if (result == null) {
          serviceDescriptor = result = io.grpc.ServiceDescriptor.newBuilder(SERVICE_NAME)
              .setSchemaDescriptor(new ProjectionServiceFileDescriptorSupplier())
              .addMethod(getGetProjectionStatusMethod())
              .addMethod(getListDeadLettersMethod())
              .build();
        }
      }
    }
    return result;
  }
}
