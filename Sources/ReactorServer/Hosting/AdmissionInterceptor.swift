import Reactor

/// Asks the state whether it admits each event a client fires (`HostedState.admissionProblem`),
/// inside the core, so that every transport's events pass the same check, on the state each is
/// about to be applied to.
struct AdmissionInterceptor<StateType: HostedState>: Interceptor {
    let bodyLimit: Int

    func intercept(event: Event, state: StateType) throws {
        if let problem = state.admissionProblem(of: event, bodyLimit: bodyLimit) { throw problem }
    }
}
